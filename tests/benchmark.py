"""Measured speed of proxytop and its load on ProxySQL; prints one table per figure.

    python3 -m tests.benchmark            # everything (about fifteen minutes on 2 cores)
    python3 -m tests.benchmark --only cpu,load --cycles 10

What is measured, and how:

cpu      CPU time per refresh cycle, per screen, at typical sizes and at scale (10,000
         processlist sessions, 5,000 query rules, 500 backends, 64 block devices, 500 MySQL
         servers). The real parts: a Controller built by ``proxytop.cli.build`` on a real
         Engine, the ProxySQL test double (scaled with generated rows through its transforms),
         fake /proc/diskstats files for the IOstat screen, a throw-away MariaDB for InnoDB.
         The engine is stepped on this thread (``Engine.poll_now``) with its clock advanced by
         the screen's interval, so a cycle is exactly: the due collectors' queries and parsing
         ("collect"), then ``proxytop.ui.view.render`` (rows, sort, filter, notes, cells: "derive +
         render"); "redraw" is the render the UI repeats ten times a second without new data.
         Figures are CPU seconds of this thread (time.thread_time), so the double's own work
         (other threads) is not counted; the mean over the cycles includes the slow,
         own-pace collectors at their share.
latency  Key-to-screen latency at scale, end to end: the real installed ``proxytop`` in a
         pseudo-terminal (tests/terminal.py), the key's bytes written to the terminal, the time
         until the terminal emulator shows the changed screen (sort column in the status line,
         the filter applied, the other screen's column titles). The double runs in a child
         process so that its work does not slow this one. The in-process cost of the same keys
         (controller.handle_key + view.render) is shown beside it.
memory   Resident memory of that real proxytop process while it shows every screen at scale
         (psutil; the largest value seen).
idle     CPU of a real proxytop process on ConnPool with typical data at a 1 s interval,
         over 20 s (psutil cpu_times of the process: user + system, all threads).
load     The admin queries a real proxytop sends per refresh on each screen, and the tables
         they name, from the double's query log (the header's stats_mysql_global included).

The targets are those of the performance issue; the last column says whether one is met.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import psutil

from tests.proxysql_double import ProxySQLDouble, Recording

WIDTH, HEIGHT = 200, 50  # the terminal the benchmark renders for
SCREENS = ("connpool", "queryrules", "glostat", "proclist", "comcount", "innodb", "iostat")
TITLES = {"connpool": "ConnPool", "queryrules": "QueryRules", "glostat": "GloStat", "proclist": "ProcList",
          "comcount": "ComCount", "innodb": "InnoDB", "iostat": "IOstat"}

TYPICAL = dict(sessions=150, rules=40, backends=12, devices=4, servers=1)
SCALE = dict(sessions=10_000, rules=5_000, backends=500, devices=64, servers=500)

TARGET_TYPICAL_MS = 5.0
TARGET_SCALE_MS = 50.0
TARGET_LATENCY_P95_MS = 50.0
TARGET_RSS_MB = 80.0
TARGET_IDLE_PCT = 1.0


# ----- generated data ---------------------------------------------------------------------------

def _fill(columns: Sequence[str], values: Dict[str, object]) -> list:
    """A row in the table's own column order; columns the generator doesn't know are NULL."""
    return [values.get(c) for c in columns]


class Generated:
    """Transforms for the double: each call of a table is one more reading, so counters grow
    and rates appear. Sizes: sessions, rules, backends."""

    QUERIES = (
        "SELECT c FROM sbtest{t} WHERE id={i}",
        "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN {i} AND {j} ORDER BY c",
        "UPDATE sbtest{t} SET k=k+1 WHERE id={i}",
        "INSERT INTO orders (customer_id, amount, created_at) VALUES ({i}, {j}.50, NOW())",
        "SELECT o.id, o.amount, c.name FROM orders o JOIN customers c ON c.id = o.customer_id "
        "WHERE o.created_at > NOW() - INTERVAL 1 DAY AND c.region = 'region-{t}' LIMIT 100",
        "COMMIT",
    )

    def __init__(self, sessions: int, rules: int, backends: int):
        self.sessions, self.rules, self.backends = sessions, rules, backends
        self.calls: Dict[str, int] = {}
        self._lock = threading.Lock()

    def _tick(self, table: str) -> int:
        with self._lock:
            self.calls[table] = self.calls.get(table, 0) + 1
            return self.calls[table]

    def transforms(self) -> Dict[str, Callable]:
        made = {
            "stats_mysql_processlist": self.processlist,
            "stats_mysql_connection_pool": self.pool,
            "runtime_mysql_servers": self.servers,
            "mysql_servers": self.servers,
            "runtime_mysql_query_rules": self.rule_definitions,
            "mysql_query_rules": self.rule_definitions,
            "stats_mysql_query_rules": self.rule_hits,
        }
        return made

    # backends: hostgroups of ten servers
    def _backend(self, n: int) -> Tuple[int, str]:
        return n // 10, f"10.{n // 250}.{(n // 10) % 25}.{n % 10 + 1}"

    def pool(self, columns, _rows):
        tick = self._tick("pool")
        rows = []
        for n in range(self.backends):
            hostgroup, host = self._backend(n)
            rows.append(_fill(columns, {
                "hostgroup": str(hostgroup), "srv_host": host, "srv_port": "3306",
                "status": "SHUNNED" if n % 97 == 5 else "ONLINE",
                "ConnUsed": str(n % 17), "ConnFree": str(n % 5), "ConnOK": str(100 + n + tick),
                "ConnERR": str(n % 3 * tick), "MaxConnUsed": str(n % 17 + 3),
                "Queries": str((n + 1) * 1000 * tick), "Queries_GTID_sync": "0",
                "Bytes_data_sent": str((n + 1) * 52_000 * tick), "Bytes_data_recv": str((n + 1) * 2_900_000 * tick),
                "Latency_us": str(150 + n % 700),
            }))
        return columns, rows

    def servers(self, columns, _rows):
        rows = []
        for n in range(self.backends):
            hostgroup, host = self._backend(n)
            rows.append(_fill(columns, {
                "hostgroup_id": str(hostgroup), "hostname": host, "port": "3306", "gtid_port": "0",
                "status": "ONLINE", "weight": str(1 + n % 10), "compression": "0", "max_connections": "1000",
                "max_replication_lag": "0", "use_ssl": "0", "max_latency_ms": "0",
                "comment": f"{'writer' if n % 10 == 0 else 'reader'} rack-{n % 7}",
            }))
        return columns, rows

    def _rule(self, n: int) -> Dict[str, object]:
        kinds = ("^SELECT .* FOR UPDATE$", "^SELECT", "^(INSERT|UPDATE|DELETE)", None)
        return {
            "rule_id": str(n), "active": "0" if n % 50 == 0 else "1",
            "username": f"app{n % 9}" if n % 4 == 0 else None, "schemaname": None,
            "flagIN": "0", "flagOUT": None, "client_addr": None, "proxy_addr": None, "proxy_port": None,
            "digest": f"0x{n * 2654435761 % (1 << 64):016X}" if kinds[n % 4] is None else None,
            "match_digest": kinds[n % 4] and f"{kinds[n % 4]} /\\* tenant {n} \\*/",
            "match_pattern": None, "negate_match_pattern": "0", "re_modifiers": "CASELESS",
            "replace_pattern": None, "destination_hostgroup": str(n % 50), "cache_ttl": "5000" if n % 11 == 0 else None,
            "cache_empty_result": None, "cache_timeout": None, "reconnect": None, "timeout": None,
            "retries": None, "delay": None, "next_query_flagIN": None, "mirror_flagOUT": None,
            "mirror_hostgroup": None, "error_msg": None, "OK_msg": None, "sticky_conn": None,
            "multiplex": None, "gtid_from_hostgroup": None, "log": None, "apply": "1",
            "attributes": "", "comment": f"tenant {n}",
        }

    def rule_definitions(self, columns, _rows):
        return columns, [_fill(columns, self._rule(n)) for n in range(1, self.rules + 1)]

    def rule_hits(self, columns, _rows):
        tick = self._tick("rules")
        return columns, [_fill(columns, {"rule_id": str(n), "hits": str(n * 7 * tick + (n % 13) * tick * tick)})
                         for n in range(1, self.rules + 1)]

    def processlist(self, columns, _rows):
        tick = self._tick("processlist")
        rows = []
        queries = self.QUERIES
        for n in range(self.sessions):
            idle = n % 5 == 4  # a fifth of the sessions are idle (hidden by default)
            text = None if idle else queries[n % len(queries)].format(t=n % 32, i=n * 37, j=n * 37 + 100)
            hostgroup, host = self._backend(n % max(1, self.backends))
            rows.append(_fill(columns, {
                "ThreadID": str(n % 4), "SessionID": str(n + 1), "user": f"app{n % 9}", "db": "shop",
                "cli_host": f"10.20.{n // 250 % 250}.{n % 250}", "cli_port": str(30000 + n % 30000),
                "hostgroup": str(hostgroup), "l_srv_host": "10.0.0.1", "l_srv_port": str(40000 + n % 20000),
                "srv_host": None if idle else host, "srv_port": None if idle else "3306",
                "command": "Sleep" if idle else "Query", "time_ms": str((n * 7919 + tick * 1000) % 120_000),
                "info": text, "status_flags": "0", "extended_info": None,
            }))
        return columns, rows


class FakeDisks:
    """A /proc with a diskstats of ``count`` whole disks (17 fields, kernel 5.5+) that move on
    every ``advance()``, and an empty sysfs (every device is a disk)."""

    def __init__(self, count: int):
        self.count = count
        self.root = tempfile.mkdtemp(prefix="proxytop-bench-disks-")
        self.proc = os.path.join(self.root, "proc")
        self.sysfs = os.path.join(self.root, "sys")
        os.makedirs(os.path.join(self.proc, "self"))
        os.makedirs(self.sysfs)
        with open(os.path.join(self.proc, "self", "mountinfo"), "w") as handle:
            handle.write("")
        self.tick = 0
        self.advance()

    @staticmethod
    def name(n: int) -> str:
        letters = "abcdefghijklmnopqrstuvwxyz"
        return "sd" + (letters[n // 26 - 1] if n >= 26 else "") + letters[n % 26]

    def advance(self) -> None:
        self.tick += 1
        t = self.tick
        lines = []
        for n in range(self.count):
            reads, writes = (n + 1) * 120 * t, (n + 1) * 300 * t
            lines.append(f"   8 {n * 16:7d} {self.name(n)} {reads} {reads // 10} {reads * 16} {reads // 4} "
                         f"{writes} {writes // 5} {writes * 24} {writes // 3} {n % 4} {t * 700} {t * 1300} "
                         f"{t * 3} 0 {t * 24} {t} {t * 5} {t * 2}")
        with open(os.path.join(self.proc, "diskstats"), "w") as handle:
            handle.write("\n".join(lines) + "\n")

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def serve_double(sessions: int, rules: int, backends: int, port: int = 0) -> None:
    """``python -m tests.benchmark --serve-double N,N,N``: a scaled double in its own process.
    Prints its port, serves until its stdin closes, then prints the statements it received
    (one JSON list of [user, statement] pairs, each distinct pair once)."""
    import json

    double = ProxySQLDouble(port=port)
    double.transforms.update(Generated(sessions, rules, backends).transforms())
    double.start()
    print(double.port, flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin
    finally:
        double.stop()
        seen = sorted({(user, sql) for _, user, sql in double.query_log})
        print(json.dumps(seen + [["(kills)", json.dumps(double.kills)]]), flush=True)


class DoubleProcess:
    """A scaled double in a child process (its work does not slow this one): ``port``, and
    after it stopped, ``statements`` ([(user, sql)]) and ``kills``."""

    def __init__(self, sizes: Dict[str, int]):
        self.sizes = sizes
        self.port = 0
        self.statements: List[Tuple[str, str]] = []
        self.kills: List[int] = []
        self.process: Optional[subprocess.Popen] = None

    def start(self) -> "DoubleProcess":
        sizes = self.sizes
        self.process = subprocess.Popen([sys.executable, "-m", "tests.benchmark", "--serve-double",
                                         f"{sizes['sessions']},{sizes['rules']},{sizes['backends']}"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.port = int(self.process.stdout.readline())
        return self

    def stop(self) -> None:
        import json

        process = self.process
        if process is None:
            return
        self.process = None
        process.stdin.close()
        try:
            report = process.stdout.readline()
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
            return
        pairs = json.loads(report) if report.strip() else []
        self.statements = [(user, sql) for user, sql in pairs if user != "(kills)"]
        self.kills = [kill for user, sql in pairs if user == "(kills)" for kill in json.loads(sql)]


@contextmanager
def double_process(sizes: Dict[str, int]) -> Iterator[int]:
    double = DoubleProcess(sizes).start()
    try:
        yield double.port
    finally:
        double.stop()


# ----- MariaDB for the InnoDB screen ------------------------------------------------------------

class MySQLFleet:
    """One throw-away MariaDB reached through ``count`` distinct socket paths (symbolic links
    to its socket), so the InnoDB screen watches ``count`` servers, each with its own
    connection and thread, without starting ``count`` servers."""

    def __init__(self):
        self.server = None
        self.links_dir = tempfile.mkdtemp(prefix="proxytop-bench-sockets-")
        self.problem: Optional[str] = None

    def start(self) -> "MySQLFleet":
        from tests.mariadb import MariaDBServer, MariaDBUnavailable

        try:
            self.server = MariaDBServer({"max_connections": "1200"}, name="bench").start()
        except (MariaDBUnavailable, Exception) as exc:  # the other figures still count
            self.problem = f"no MariaDB: {str(exc).splitlines()[0]}"
            self.server = None
        return self

    def sockets(self, count: int) -> List[str]:
        paths = []
        for n in range(count):
            path = os.path.join(self.links_dir, f"db{n:03d}.sock")
            if not os.path.exists(path):
                os.symlink(self.server.socket, path)
            paths.append(path)
        return paths

    def args(self, count: int) -> List[str]:
        if self.server is None:
            return []
        args = ["--no-discover", "--mysql-user", self.server.user, "--mysql-password", self.server.password]
        for path in self.sockets(count):
            args += ["--mysql-socket", path]
        return args

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        shutil.rmtree(self.links_dir, ignore_errors=True)


# ----- in-process refresh cycles -----------------------------------------------------------------

class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ms(seconds: float) -> float:
    return seconds * 1000.0


class Stepper:
    """A Controller from proxytop.cli.build on a real Engine whose workers never start: the
    engine is stepped on this thread, its clock advanced by the screen's interval."""

    def __init__(self, argv: Sequence[str], disks: Optional[FakeDisks] = None):
        from proxytop import cli
        from proxytop import options
        from proxytop.polling.engine import Engine

        self.clock = FakeClock()
        config = options.parse(list(argv), {})
        self.engine, self.controller = cli.build(config, Engine(clock=self.clock))
        self.disks = disks
        if disks is not None:
            from proxytop.collectors.diskstats import NAME
            from proxytop.polling.devices import DeviceMapper

            collector = self.engine.collector(NAME)
            collector.proc = disks.proc
            collector.psutil_counters = None  # everything from the fake file
            collector.cpu_times = lambda: psutil.cpu_times()
            collector.state_path = None
            collector.mapper = DeviceMapper(sysfs=disks.sysfs, mountinfo=os.path.join(disks.proc, "self", "mountinfo"))
        self.controller.activate()
        self.handles: Dict[str, object] = {}

    def connect(self) -> None:
        names = {self.engine.collector(n).source for n in self.engine.active}
        for name in sorted(names):
            if name not in self.handles:
                self.handles[name] = self.engine.source(name).connect()

    def close(self) -> None:
        for name, handle in self.handles.items():
            self.engine.source(name).close(handle)
        self.handles.clear()

    def cycle(self) -> Tuple[float, float, float, list]:
        """(collect, derive + render, redraw) CPU seconds of one refresh, and the lines."""
        from proxytop.ui import view

        self.clock.now += self.controller.interval()
        if self.disks is not None:
            self.disks.advance()
        start = time.thread_time()
        problems = self.engine.poll_now(self.handles)
        collected = time.thread_time()
        lines = view.render(self.controller, WIDTH, HEIGHT)
        rendered = time.thread_time()
        view.render(self.controller, WIDTH, HEIGHT)
        redrawn = time.thread_time()
        lost = [p for p in problems.values() if p]
        if lost:
            raise RuntimeError(f"connection lost during the benchmark: {lost[0]}")
        return collected - start, rendered - collected, redrawn - rendered, lines


def screen_argv(screen: str, port: int, fleet: Optional[MySQLFleet], sizes: Dict[str, int]) -> List[str]:
    argv = ["-P", str(port), "--screen", screen, "-d", "1"]
    if screen == "innodb" and fleet is not None:
        argv += fleet.args(sizes["servers"])
    else:
        argv += ["--no-discover"]
    return argv


def size_label(screen: str, sizes: Dict[str, int], fleet: Optional[MySQLFleet]) -> str:
    return {
        "connpool": f"{sizes['backends']} backends",
        "queryrules": f"{sizes['rules']} rules",
        "glostat": "108 variables",
        "proclist": f"{sizes['sessions']} sessions",
        "comcount": "54 commands",
        "innodb": f"{sizes['servers']} servers" if fleet is not None and fleet.server is not None else "no MariaDB",
        "iostat": f"{sizes['devices']} devices",
    }[screen]


def table_rows(lines: Sequence) -> int:
    """Rows the status line says the table has."""
    from proxytop.ui.view import screen_text

    match = re.search(r"(?:(\d+)/)?(\d+) rows?", screen_text(lines))
    return int(match.group(2)) if match else 0


def measured_cycles(stepper: "Stepper", cycles: int) -> List[tuple]:
    """Connect, warm up (two readings make rates, caches fill), then ``cycles`` stepped
    refreshes: their (collect, derive+render, redraw, lines) samples."""
    stepper.connect()
    for _ in range(3):
        stepper.cycle()
    return [stepper.cycle() for _ in range(cycles)]


def cpu_figures(samples: Sequence[tuple]) -> dict:
    """Mean collect, derive+render and total ms of CPU, the worst total and the median redraw."""
    total = [s[0] + s[1] for s in samples]
    return dict(rows=table_rows(samples[-1][3]), collect=ms(statistics.mean(s[0] for s in samples)),
                derive=ms(statistics.mean(s[1] for s in samples)), total=ms(statistics.mean(total)),
                worst=ms(max(total)), redraw=ms(statistics.median(s[2] for s in samples)))


def bench_cpu(cycles: int, fleet: Optional[MySQLFleet], recording: Recording, screens: Sequence[str]) -> List[dict]:
    results = []
    for label, sizes, target in (("typical", TYPICAL, TARGET_TYPICAL_MS), ("scale", SCALE, TARGET_SCALE_MS)):
        generated = Generated(sizes["sessions"], sizes["rules"], sizes["backends"])
        double = ProxySQLDouble(recording=recording)
        double.transforms.update(generated.transforms())
        double.start()
        try:
            for screen in screens:
                if screen == "innodb" and (fleet is None or fleet.server is None):
                    results.append(dict(screen=screen, size=label, label="skipped: no MariaDB", skipped=True))
                    continue
                disks = FakeDisks(sizes["devices"]) if screen == "iostat" else None
                stepper = Stepper(screen_argv(screen, double.port, fleet, sizes), disks)
                try:
                    samples = measured_cycles(stepper, cycles)
                finally:
                    stepper.close()
                    if disks is not None:
                        disks.close()
                results.append(dict(screen=screen, size=label, label=size_label(screen, sizes, fleet),
                                    interval=stepper.controller.interval(), target=target, **cpu_figures(samples)))
                print(f"  cpu {label:<8} {screen:<10} {results[-1]['total']:8.2f} ms", file=sys.stderr, flush=True)
        finally:
            double.stop()
    return results


def print_cpu(results: List[dict], cycles: int, out) -> bool:
    print(f"CPU per refresh cycle (ms of CPU; mean of {cycles} cycles after 3 warm-up cycles; {WIDTH}x{HEIGHT} terminal)",
          file=out)
    header = (f"{'screen':<11}{'size':<8}{'data':<17}{'rows':>6}{'every':>6}{'collect':>9}{'derive+render':>14}"
              f"{'total':>8}{'worst':>8}{'redraw':>8}{'target':>8}  ok")
    print(header, file=out)
    print("-" * len(header), file=out)
    all_ok = True
    for r in results:
        if r.get("skipped"):
            print(f"{TITLES[r['screen']]:<11}{r['size']:<8}{r['label']}", file=out)
            continue
        ok = r["total"] <= r["target"]
        all_ok &= ok
        print(f"{TITLES[r['screen']]:<11}{r['size']:<8}{r['label']:<17}{r['rows']:>6}{r['interval']:>5g}s"
              f"{r['collect']:>9.2f}{r['derive']:>14.2f}{r['total']:>8.2f}{r['worst']:>8.2f}{r['redraw']:>8.2f}"
              f"{r['target']:>8g}  {'yes' if ok else 'NO'}", file=out)
    return all_ok


# ----- the real program in a terminal ------------------------------------------------------------

HEADERS = {  # a screen is on the terminal when its column titles are (sort arrows removed)
    "connpool": r"Server\s+Status\s+Used",
    "queryrules": r"Rule\s+Hits/s",
    "glostat": r"Variable\s+Value",
    "proclist": r"Session\s+User",
    "comcount": r"Command\s+Total\s+Count/s",
    "innodb": r"Server\s+HG/Status",
    "iostat": r"Device\s.*\br/s",
}
FILTERS = {"connpool": "status:SHUN", "queryrules": "hg=7", "proclist": "user:app3"}
_SORTED = re.compile(r"^sort (.+?) [\u2191\u2193]", re.MULTILINE)
_ROWS = re.compile(r"^sort .*?(?:(\d+)/)?(\d+) rows?", re.MULTILINE)


def plain(screen: str) -> str:
    return screen.replace("\u2191", "").replace("\u2193", "")


def showing(screen: str, key: str) -> bool:
    return re.search(HEADERS[key], plain(screen)) is not None


def sorted_by(screen: str) -> Optional[str]:
    match = _SORTED.search(screen)
    return match.group(1) if match else None


def row_count(screen: str) -> Optional[int]:
    match = _ROWS.search(screen)
    return int(match.group(2)) if match else None


def timed_terminal(*args, **kwargs):
    """tests/terminal.py's Terminal whose output is read on one thread, stamped with the time
    it arrived, and fed to the terminal emulator on another: the time a change reached the
    terminal does not include the emulator's own (slow, pure Python) parsing of it."""
    import queue
    import select

    from tests.terminal import Terminal

    class TimedTerminal(Terminal):
        watch: Optional[Callable[[str], bool]] = None
        seen_at: Optional[float] = None

        def _read_loop(self) -> None:
            chunks: "queue.Queue" = queue.Queue()
            threading.Thread(target=self._feed_loop, args=(chunks,), daemon=True).start()
            while True:
                try:
                    ready, _, _ = select.select([self.fd], [], [], 0.2)
                except (OSError, ValueError):
                    break
                if not ready:
                    if self.exit_status is not None:
                        break
                    continue
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                arrived = time.perf_counter()
                with self._lock:
                    self.raw.extend(data)
                chunks.put((arrived, data))
            chunks.put(None)

        def _feed_loop(self, chunks) -> None:
            while True:
                item = chunks.get()
                if item is None:
                    return
                arrived, data = item
                with self._lock:
                    self.stream.feed(data)
                watch = self.watch
                if watch is not None and self.seen_at is None and watch(self.text()):
                    self.seen_at = arrived

    return TimedTerminal(*args, **kwargs)


class Driver:
    """Keys into the real proxytop and the time until the terminal received the output that
    shows their effect."""

    def __init__(self, term):
        self.term = term

    def press(self, keys: str, done: Callable[[str], bool], timeout: float = 10.0) -> float:
        term = self.term
        term.seen_at = None
        term.watch = done
        started = time.perf_counter()
        os.write(term.fd, keys.encode())
        deadline = started + timeout
        try:
            while term.seen_at is None:
                if time.perf_counter() > deadline:
                    raise AssertionError(f"no change after {keys!r} within {timeout}s; screen:\n{term.text()}")
                time.sleep(0.002)
            return term.seen_at - started
        finally:
            term.watch = None

    def type(self, keys: str, done: Callable[[str], bool], timeout: float = 10.0) -> None:
        self.press(keys, done, timeout)


class RSSSampler(threading.Thread):
    """The largest resident memory (and thread count) of a process, overall and per phase."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.phase = "start"
        self.peak: Dict[str, float] = {}
        self.threads: Dict[str, int] = {}
        self.stopping = False

    def run(self) -> None:
        while not self.stopping:
            try:
                with self.process.oneshot():
                    rss = self.process.memory_info().rss / 2 ** 20
                    threads = self.process.num_threads()
            except psutil.Error:
                return
            phase = self.phase
            self.peak[phase] = max(self.peak.get(phase, 0.0), rss)
            self.threads[phase] = max(self.threads.get(phase, 0), threads)
            time.sleep(0.1)


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[index]


def bench_terminal_at_scale(fleet: Optional[MySQLFleet], rounds: int) -> Tuple[Dict[str, List[float]], RSSSampler, List[str]]:
    """Sort, filter and tab-switch latencies of the real program at scale, and its memory."""
    latencies: Dict[str, List[float]] = {"sort": [], "filter": [], "tab switch": [], "tab from InnoDB": []}
    notes: List[str] = []
    state = tempfile.mkdtemp(prefix="proxytop-bench-state-")
    with double_process(SCALE) as port:
        args = ["-P", str(port), "-d", "1"]
        if fleet is not None and fleet.server is not None:
            args += fleet.args(SCALE["servers"])
        else:
            args += ["--no-discover"]
            notes.append("InnoDB: no MariaDB here, so no servers (the screen is empty)")
        term = timed_terminal(args, cols=WIDTH, rows=HEIGHT, env={"XDG_STATE_HOME": state})
        term.wait_for(r"^proxytop ", timeout=30)  # exec'd: no longer the fork of this process
        sampler = RSSSampler(term.pid)
        sampler.start()
        driver = Driver(term)
        try:
            term.wait_until(lambda s: row_count(s) == SCALE["backends"], timeout=60, what="500 backends")
            for index, key in enumerate(SCREENS, start=1):
                sampler.phase = key
                took = driver.press(str(index), lambda s, k=key: showing(s, k))
                latencies["tab from InnoDB" if index > 1 and SCREENS[index - 2] == "innodb" else "tab switch"].append(took)
                expected = {"connpool": SCALE["backends"], "queryrules": SCALE["rules"],
                            "proclist": SCALE["sessions"] * 4 // 5,
                            "innodb": SCALE["servers"] if fleet is not None and fleet.server is not None else None
                            }.get(key)
                if expected:
                    term.wait_until(lambda s, n=expected: row_count(s) == n, timeout=120, what=f"{expected} rows")
                    time.sleep(2.5)  # a few refreshes: rates, and the slow collectors' first reading
                else:
                    time.sleep(2.5)
                if key not in FILTERS:
                    continue
                for _ in range(rounds):
                    before = sorted_by(term.text())
                    latencies["sort"].append(driver.press("s", lambda s, b=before: sorted_by(s) not in (None, b)))
                text = FILTERS[key]
                for _ in range(max(1, rounds // 2)):
                    driver.type("/" + text, lambda s, t=text: f"filter: {t}" in s)
                    pattern = re.compile(rf"^sort .*filter {re.escape(text)}\s+\d+/\d+ rows?", re.MULTILINE)
                    latencies["filter"].append(driver.press("\r", lambda s, p=pattern: p.search(s) is not None))
                    latencies["filter"].append(driver.press(
                        "\\", lambda s: re.search(r"^sort .* \d+ rows?", s, re.MULTILINE) is not None
                        and not re.search(r"^sort .*filter ", s, re.MULTILINE)))
            shown = SCREENS[-1]
            for _ in range(max(1, rounds // 3)):
                for index, key in enumerate(SCREENS, start=1):
                    sampler.phase = key
                    took = driver.press(str(index), lambda s, k=key: showing(s, k))
                    latencies["tab from InnoDB" if shown == "innodb" else "tab switch"].append(took)
                    print(f"  tab {shown} -> {key}: {ms(took):.1f} ms", file=sys.stderr, flush=True)
                    shown = key
                    time.sleep(1.0 if key == "innodb" else 0.3)
            term.send("q")
            term.wait_exit(15)
        finally:
            sampler.stopping = True
            term.close()
            shutil.rmtree(state, ignore_errors=True)
    return latencies, sampler, notes


def bench_in_process_keys(rounds: int) -> Dict[str, List[float]]:
    """The same keys handled in this process: controller.handle_key + view.render, at scale."""
    from proxytop.ui import view

    measured: Dict[str, List[float]] = {"sort": [], "filter": [], "tab switch": []}
    generated = Generated(SCALE["sessions"], SCALE["rules"], SCALE["backends"])
    double = ProxySQLDouble()
    double.transforms.update(generated.transforms())
    double.start()
    disks = FakeDisks(SCALE["devices"])
    stepper = Stepper(["-P", str(double.port), "-d", "1", "--no-discover"], disks)
    ctl = stepper.controller

    def timed(key: str) -> float:
        started = time.perf_counter()
        ctl.handle_key(key)
        view.render(ctl, WIDTH, HEIGHT)
        return time.perf_counter() - started

    try:
        for index in range(len(SCREENS)):  # every screen gets its data
            ctl.switch(index)
            stepper.connect()
            for _ in range(2):
                stepper.cycle()
        for _ in range(max(1, rounds // 3)):
            for index in range(len(SCREENS)):
                measured["tab switch"].append(timed(str(index + 1)))
        for key in FILTERS:
            ctl.switch(SCREENS.index(key))
            view.render(ctl, WIDTH, HEIGHT)
            for _ in range(rounds):
                measured["sort"].append(timed("s"))
            for _ in range(max(1, rounds // 2)):
                for ch in "/" + FILTERS[key]:
                    ctl.handle_key(ch)
                measured["filter"].append(timed("\r"))
                measured["filter"].append(timed("\\"))
    finally:
        stepper.close()
        disks.close()
        double.stop()
    return measured


def print_latency(real: Dict[str, List[float]], local: Dict[str, List[float]], out) -> bool:
    print(f"Key-to-screen latency at scale (ms; {SCALE['sessions']} sessions, {SCALE['rules']} rules, "
          f"{SCALE['backends']} backends, {SCALE['servers']} MySQL servers)", file=out)
    print("  end to end: key bytes into the terminal -> the changed screen in the terminal emulator;", file=out)
    print("  in process: controller.handle_key + view.render only", file=out)
    header = (f"{'key':<16}{'samples':>8}{'p50':>8}{'p95':>8}{'max':>8}   {'in process p50':>14}{'p95':>8}"
              f"{'target p95':>11}  ok")
    print(header, file=out)
    print("-" * len(header), file=out)
    ok_all = True
    for action in ("sort", "filter", "tab switch", "tab from InnoDB"):
        values, inside = real.get(action) or [], local.get(action if action != "tab from InnoDB" else "") or []
        if not values:
            continue
        p95 = ms(percentile(values, 0.95))
        ok = p95 <= TARGET_LATENCY_P95_MS
        ok_all &= ok
        print(f"{action:<16}{len(values):>8}{ms(percentile(values, 0.5)):>8.1f}{p95:>8.1f}{ms(max(values)):>8.1f}   "
              f"{(f'{ms(percentile(inside, 0.5)):.1f}' if inside else '-'):>14}"
              f"{(f'{ms(percentile(inside, 0.95)):.1f}' if inside else '-'):>8}{TARGET_LATENCY_P95_MS:>11g}  "
              f"{'yes' if ok else 'NO'}", file=out)
    return ok_all


EXPECTED_ROWS = {"connpool": SCALE["backends"], "queryrules": SCALE["rules"], "proclist": SCALE["sessions"] * 4 // 5}


def bench_memory(fleet: Optional[MySQLFleet], seconds: float) -> List[dict]:
    """Each screen at scale in a fresh proxytop: the largest resident memory while it runs
    (QueryRules until its sparkline history is full: 61 readings)."""
    from tests.terminal import Terminal

    results = []
    state = tempfile.mkdtemp(prefix="proxytop-bench-state-")
    with double_process(SCALE) as port:
        for key in SCREENS:
            args = ["-P", str(port), "-d", "1", "--screen", key]
            servers = 0
            if key == "innodb" and fleet is not None and fleet.server is not None:
                args += fleet.args(SCALE["servers"])
                servers = SCALE["servers"]
            else:
                args += ["--no-discover"]
            term = Terminal(args, cols=WIDTH, rows=HEIGHT, env={"XDG_STATE_HOME": state})
            # Until it has drawn, the child may still be the fork of this process (its memory).
            term.wait_for(r"^proxytop ", timeout=30)
            sampler = RSSSampler(term.pid)
            sampler.phase = key
            sampler.start()
            try:
                expected = EXPECTED_ROWS.get(key) or servers
                if expected:
                    term.wait_until(lambda s, n=expected: row_count(s) == n, timeout=120, what=f"{expected} rows")
                run = max(seconds, 65.0) if key == "queryrules" else seconds
                time.sleep(run)
            finally:
                sampler.stopping = True
                term.close()
            results.append(dict(screen=key, peak=sampler.peak.get(key, 0.0), threads=sampler.threads.get(key, 0),
                                seconds=run, label=size_label(key, SCALE, fleet)))
            print(f"  memory {key:<10} {results[-1]['peak']:8.1f} MB", file=sys.stderr, flush=True)
    shutil.rmtree(state, ignore_errors=True)
    return results


def print_memory(results: List[dict], session: Optional[RSSSampler], out) -> bool:
    print("Resident memory of the real proxytop at scale (MB; psutil RSS, largest value seen)", file=out)
    header = f"{'screen':<11}{'data':<17}{'seconds':>8}{'threads':>8}{'peak MB':>9}{'target':>8}  ok"
    print(header, file=out)
    print("-" * len(header), file=out)
    ok_all = True
    for r in results:
        ok = r["peak"] <= TARGET_RSS_MB
        ok_all &= ok
        print(f"{TITLES[r['screen']]:<11}{r['label']:<17}{r['seconds']:>8.0f}{r['threads']:>8}{r['peak']:>9.1f}"
              f"{TARGET_RSS_MB:>8g}  {'yes' if ok else 'NO'}", file=out)
    if session is not None and session.peak:
        peak = max(session.peak.values())
        threads = max(session.threads.values())
        ok = peak <= TARGET_RSS_MB
        ok_all &= ok
        print(f"{'all seven':<11}{'one session':<17}{'':>8}{threads:>8}{peak:>9.1f}{TARGET_RSS_MB:>8g}  "
              f"{'yes' if ok else 'NO'}", file=out)
        print("  all seven: the latency session above, every screen at scale shown in turn in one process", file=out)
    return ok_all


def bench_idle(seconds: float, recording: Recording) -> Tuple[float, Dict[str, float]]:
    """CPU of a real proxytop on ConnPool, typical data, 1 s interval: % of one core."""
    from tests.terminal import Terminal

    double = ProxySQLDouble(recording=recording).start()
    state = tempfile.mkdtemp(prefix="proxytop-bench-state-")
    term = Terminal(["-P", str(double.port), "-d", "1"], cols=120, rows=40, env={"XDG_STATE_HOME": state})
    try:
        term.wait_until(lambda s: row_count(s) == 3 and "Q/s " in s and "Q/s \u2014" not in s, timeout=20,
                        what="rates on ConnPool")
        time.sleep(3)
        process = psutil.Process(term.pid)
        before_threads = {t.id: t for t in process.threads()}
        before = process.cpu_times()
        started = time.monotonic()
        time.sleep(seconds)
        after = process.cpu_times()
        elapsed = time.monotonic() - started
        after_threads = {t.id: t for t in process.threads()}
        used = (after.user + after.system) - (before.user + before.system)
        split = {}
        for tid, thread in after_threads.items():
            if tid in before_threads:
                old = before_threads[tid]
                label = "UI" if tid == term.pid else f"thread {tid}"
                split[label] = 100.0 * ((thread.user_time + thread.system_time) - (old.user_time + old.system_time)) / elapsed
        return 100.0 * used / elapsed, split
    finally:
        term.close()
        double.stop()
        shutil.rmtree(state, ignore_errors=True)


def print_idle(percent: float, split: Dict[str, float], seconds: float, out) -> bool:
    ok = percent < TARGET_IDLE_PCT
    parts = ", ".join(f"{label} {value:.2f}%" for label, value in sorted(split.items(), key=lambda kv: -kv[1]) if value)
    print(f"Idle CPU of the real proxytop on ConnPool, typical data, 1 s interval, over {seconds:g} s", file=out)
    print(f"  {percent:.2f}% of one core ({parts or 'no thread above the clock tick'}); "
          f"target < {TARGET_IDLE_PCT:g}%: {'yes' if ok else 'NO'}", file=out)
    return ok


# ----- load on ProxySQL ---------------------------------------------------------------------------

NEEDS = {  # the tables each screen reads, besides the header's stats_mysql_global
    "connpool": {"stats_mysql_connection_pool", "runtime_mysql_servers", "runtime_mysql_replication_hostgroups",
                 "mysql_server_ping_log", "mysql_server_connect_log", "mysql_server_read_only_log",
                 "mysql_server_replication_lag_log"},
    "queryrules": {"stats_mysql_query_rules", "runtime_mysql_query_rules", "mysql_query_rules"},
    "glostat": {"stats_memory_metrics", "global_variables"},
    "proclist": {"stats_mysql_processlist"},
    "comcount": {"stats_mysql_commands_counters"},
    "innodb": {"runtime_mysql_servers", "global_variables"},
    "iostat": set(),
}
HEADER_TABLES = {"stats_mysql_global", "stats_mysql_connection_pool"}  # the pool: the backend alarm, every 2 s
SETUP = re.compile(r"^(select @@version(_comment)?( limit 1)?|show tables( from stats)?)$", re.IGNORECASE)
_TABLE = re.compile(r"\bfrom\s+([\w.]+)", re.IGNORECASE)


def tables_of(sql: str) -> List[str]:
    return [name.split(".")[-1].lower() for name in _TABLE.findall(sql)]


def bench_load(window: float, recording: Recording) -> List[dict]:
    """Per screen: the admin queries a real proxytop sends while it is shown, by table."""
    from tests.terminal import Terminal

    double = ProxySQLDouble(recording=recording).start()
    state = tempfile.mkdtemp(prefix="proxytop-bench-state-")
    term = Terminal(["-P", str(double.port), "-d", "1"], cols=WIDTH, rows=HEIGHT, env={"XDG_STATE_HOME": state})
    results = []
    try:
        term.wait_until(lambda s: row_count(s) == 3, timeout=20, what="ConnPool")
        setup_seen = [sql for sql in double.queries() if SETUP.match(sql.strip())]
        for index, key in enumerate(SCREENS, start=1):
            term.send(str(index))
            term.wait_until(lambda s, k=key: showing(s, k), timeout=10, what=TITLES[key])
            time.sleep(2.0)  # the previous screen's last reading is over
            start = len(double.query_log)
            started = time.monotonic()
            time.sleep(window)
            with double._lock:
                log = [sql for _, _, sql in double.query_log[start:]]
            elapsed = time.monotonic() - started
            interval = 2.0 if key == "proclist" else 1.0
            refreshes = elapsed / interval
            per_table: Dict[str, int] = {}
            other = []
            for sql in log:
                if SETUP.match(sql.strip()):
                    continue
                for table in tables_of(sql) or ["(no table)"]:
                    per_table[table] = per_table.get(table, 0) + 1
                    if table not in NEEDS[key] | HEADER_TABLES:
                        other.append(table)
            results.append(dict(
                screen=key, refreshes=refreshes, per_table=per_table, other=sorted(set(other)),
                reset=[sql for sql in log if re.search(r"_reset\b", sql, re.IGNORECASE)],
                digest=[sql for sql in log if "stats_mysql_query_digest" in sql.lower()],
                writes=[sql for sql in log if not re.match(r"^\s*(select|show)\b", sql, re.IGNORECASE)],
                most=max((count / refreshes for count in per_table.values()), default=0.0),
                setup=len(setup_seen),
            ))
        term.send("q")
        term.wait_exit(10)
    finally:
        term.close()
        double.stop()
        shutil.rmtree(state, ignore_errors=True)
    return results


def print_load(results: List[dict], window: float, out) -> bool:
    print(f"Load on ProxySQL per screen: admin queries per refresh by table, from the double's query log "
          f"({window:g} s per screen, 1 s interval, ProcList 2 s)", file=out)
    header = f"{'screen':<11}{'tables read (queries per refresh)':<92}{'hidden':>7}{'reset':>6}{'digest':>7}  ok"
    print(header, file=out)
    print("-" * len(header), file=out)
    ok_all = True
    for r in results:
        parts = ", ".join(f"{table} {count / r['refreshes']:.2f}" for table, count in sorted(r["per_table"].items()))
        ok = (not r["other"] and not r["reset"] and not r["digest"] and not r["writes"] and r["most"] <= 1.05)
        ok_all &= ok
        print(f"{TITLES[r['screen']]:<11}{parts or '(none)':<92}{len(r['other']):>7}{len(r['reset']):>6}"
              f"{len(r['digest']):>7}  {'yes' if ok else 'NO'}", file=out)
        if r["other"]:
            print(f"{'':<11}read for another screen: {', '.join(r['other'])}", file=out)
    if results:
        print("  hidden = tables of screens not shown; connection set-up (once per connection, not counted): "
              "select @@version_comment, select @@version, SHOW TABLES, SHOW TABLES FROM stats", file=out)
    return ok_all


# ----- machine -----------------------------------------------------------------------------------

def machine() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
    except OSError:
        model = ""
    memory = psutil.virtual_memory().total / 2 ** 30
    import pymysql

    return (f"{os.cpu_count()} CPU cores ({model or platform.processor() or platform.machine()}), "
            f"{memory:.0f} GiB RAM, {platform.system()} {platform.release()}, "
            # pymysql.__version__ is the mysqlclient release it stands in for ("2.2.x"), not its own
            f"Python {platform.python_version()}, PyMySQL {'.'.join(map(str, pymysql.VERSION[:3]))}")


# ----- main --------------------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="cpu,latency,memory,idle,load",
                        help="comma-separated parts: cpu, latency, memory, idle, load")
    parser.add_argument("--cycles", type=int, default=20, help="measured refresh cycles per screen and size")
    parser.add_argument("--screens", default=",".join(SCREENS), help="comma-separated screens for cpu")
    parser.add_argument("--keys", type=int, default=12, help="sort presses per screen (filters: half as many)")
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="how long idle CPU is measured")
    parser.add_argument("--memory-seconds", type=float, default=20.0, help="how long each screen runs for memory")
    parser.add_argument("--load-window", type=float, default=10.0, help="seconds of query log per screen")
    parser.add_argument("--serve-double", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_double:
        sessions, rules, backends = (int(v) for v in args.serve_double.split(","))
        serve_double(sessions, rules, backends)
        return 0
    parts = set(args.only.split(","))
    out = sys.stdout
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up (MariaDB, temporary files) on kill
    print(f"proxytop benchmark on {machine()}", file=out)
    print(file=out)
    recording = Recording.load()
    fleet = MySQLFleet().start() if (parts & {"cpu", "latency", "memory"}) and "innodb" in args.screens else None
    verdicts: Dict[str, bool] = {}
    try:
        if "cpu" in parts:
            results = bench_cpu(args.cycles, fleet, recording, args.screens.split(","))
            verdicts["CPU per refresh"] = print_cpu(results, args.cycles, out)
            print(file=out, flush=True)
        sampler = None
        if "latency" in parts:
            real, sampler, notes = bench_terminal_at_scale(fleet, args.keys)
            local = bench_in_process_keys(args.keys)
            verdicts["key latency"] = print_latency(real, local, out)
            for note in notes:
                print(f"  note: {note}", file=out)
            print(file=out, flush=True)
        if "memory" in parts:
            results = bench_memory(fleet, args.memory_seconds)
            verdicts["memory"] = print_memory(results, sampler, out)
            print(file=out, flush=True)
    finally:
        if fleet is not None:
            fleet.stop()
    if "idle" in parts:
        percent, split = bench_idle(args.idle_seconds, recording)
        verdicts["idle CPU"] = print_idle(percent, split, args.idle_seconds, out)
        print(file=out, flush=True)
    if "load" in parts:
        results = bench_load(args.load_window, recording)
        verdicts["load on ProxySQL"] = print_load(results, args.load_window, out)
        print(file=out, flush=True)
    missed = [name for name, ok in verdicts.items() if not ok]
    print("Targets: " + ("all met" if not missed else "missed: " + ", ".join(missed)), file=out)
    for name in missed:
        for line in WHY.get(name, ()):
            print(f"  {line}", file=out)
    return 0


WHY = {  # what the profiles showed where a target is missed at scale
    "CPU per refresh": (
        "ProcList at 10,000 sessions (when over its target on a busy machine): 'collect' steps over the values of",
        "  10,000 row packets in pure Python to split out the four columns every session is",
        "  sorted and counted on, off the UI thread, every 2 s at most (the processlist locks ProxySQL's workers).",
        "InnoDB at 500 servers (beyond the issue's sizes: every backend of the 500-backend proxy watched):",
        "  about 0.2 ms per server reading to collect (one statement on MariaDB) and 0.1 ms to assess and draw",
        "  its row; a fleet that large is read every 5 s (1 s up to 50 servers, then servers/100 s): a few",
        "  hundredths of a core (tests.bench_innodb breaks a reading down).",
    ),
    "memory": (
        "InnoDB at 500 servers: a connection and the last readings per server (the servers share a pool of",
        "  eight polling threads); 'all seven' includes it.",
    ),
}


if __name__ == "__main__":
    sys.exit(main())
