"""What connecting the way DBAs do costs: start-up with a configuration file and a login
path, the TLS handshake, and the memory of many TLS connections sharing one SSL context.

    python3 -m tests.bench_connect

start-up     wall time of the installed ``proxytop --print-defaults`` (options, configuration
             file with 20 endpoints, a login path decrypted from ~/.mylogin.cnf, TLS files
             checked), median of 7 runs, beside the same with no configuration at all.
handshake    open_admin to the ProxySQL test double offering TLS (certificates made as the
             tests make them, the double in a child process): VERIFY_CA against DISABLED,
             median of 30 connections each; the target is on proxytop's own CPU.
memory       resident memory added per open TLS connection (VERIFY_CA with a client
             certificate) over 200 connections to the double, all sharing one SSL context.
"""
from __future__ import annotations

import multiprocessing
import os
import statistics
import subprocess
import tempfile
import time

import psutil

from proxytop.config import tls
from proxytop.polling.connection import Endpoint, open_admin, open_mysql
from tests.benchmark import ms
from tests.certificates import make_certificates
from tests.login_paths import write_login_file
from tests.proxysql_double import ProxySQLDouble, Recording
from tests.terminal import proxytop_command

TARGETS = {"start-up": 0.5, "handshake": 0.010, "memory": 64 * 1024}


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


def startup(home: str, certs) -> tuple:
    config_dir = os.path.join(home, ".config", "proxytop")
    os.makedirs(config_dir, exist_ok=True)
    nodes = "".join(f"[node:prod-{n}]\nhost = 10.0.{n}.5\nport = 6032\nlogin-path = proxysql\n" for n in range(20))
    with open(os.path.join(config_dir, "proxytop.cnf"), "w") as handle:
        handle.write(f"[proxytop]\ndelay = 2\nscreen = innodb\nssl-ca = {certs.ca}\nssl-cert = {certs.client_cert}\n"
                     f"ssl-key = {certs.client_key}\n{nodes}")
    write_login_file(os.path.join(home, ".mylogin.cnf"), {"proxysql": {"user": "radmin", "password": "x"}})
    empty = tempfile.mkdtemp(prefix="bench-connect-empty-")

    def run(environ, *argv):
        times = []
        for _ in range(7):
            started = time.perf_counter()
            subprocess.run(list(proxytop_command()) + list(argv), env=dict(os.environ, **environ),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    configured = run({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config")}, "@prod-7", "--print-defaults")
    bare = run({"HOME": empty, "XDG_CONFIG_HOME": os.path.join(empty, ".config")}, "--print-defaults")
    return configured, bare


def handshake(port: int, certs) -> tuple:
    """(wall, proxytop's CPU) medians of open_admin with VERIFY_CA and with DISABLED."""
    def median(settings):
        walls, cpus = [], []
        for _ in range(30):
            started, cpu = time.perf_counter(), time.thread_time()
            session = open_admin(Endpoint(port=port, tls=settings))
            walls.append(time.perf_counter() - started)
            cpus.append(time.thread_time() - cpu)
            session.conn.close()
        return statistics.median(walls), statistics.median(cpus)

    return median(tls.settings("VERIFY_CA", certs.ca, None, None)), median(tls.settings("DISABLED", None, None, None))


def memory(port: int, settings, count: int = 200) -> float:
    """Resident bytes per open connection with these settings."""
    endpoint = Endpoint(port=port, tls=settings)
    process = psutil.Process()
    open_mysql(endpoint).close()  # the shared context exists before measuring
    before = process.memory_info().rss
    conns = [open_mysql(endpoint) for _ in range(count)]
    after = process.memory_info().rss
    for conn in conns:
        conn.close()
    return (after - before) / count


def serve_tls_double(folder: str, ports) -> None:
    """The double with TLS, in a child process: its threads and TLS sessions are not counted."""
    from tests.certificates import Certificates

    double = ProxySQLDouble(recording=Recording.load(), tls=Certificates(folder).server_context()).start()
    ports.put(double.port)
    while True:
        time.sleep(3600)


def main() -> None:
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    print(f"load average {load:.1f} on {cores} cores" + (" (busy: wall-clock figures are inflated)"
                                                        if load > cores else ""))
    home = tempfile.mkdtemp(prefix="bench-connect-")
    certs = make_certificates(os.path.join(home, "certs"))
    configured, bare = startup(home, certs)
    print(f"start-up   --print-defaults with a configuration file, 20 endpoints, a login path: "
          f"{ms(configured):.0f} ms (without any: {ms(bare):.0f} ms)   target < {ms(TARGETS['start-up']):.0f} ms: "
          f"{verdict(configured, TARGETS['start-up'])}")
    ports: multiprocessing.Queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=serve_tls_double, args=(certs.folder, ports), daemon=True)
    child.start()
    try:
        port = ports.get(timeout=60)
        (verified, verified_cpu), (plain, plain_cpu) = handshake(port, certs)
        added = verified_cpu - plain_cpu
        print(f"handshake  open_admin VERIFY_CA {ms(verified):.1f} ms wall / {ms(verified_cpu):.1f} ms CPU, DISABLED "
              f"{ms(plain):.1f} / {ms(plain_cpu):.1f} ms: TLS adds {ms(added):.1f} ms of proxytop's CPU "
              f"({ms(verified - plain):.1f} ms wall, the double's Python side included)   "
              f"target < {ms(TARGETS['handshake']):.0f} ms CPU: {verdict(added, TARGETS['handshake'])}")
        with_tls = memory(port, tls.settings("VERIFY_CA", certs.ca, certs.client_cert, certs.client_key))
        without = memory(port, tls.settings("DISABLED", None, None, None))
        added = with_tls - without
        print(f"memory     per connection: {with_tls / 1024:.0f} KiB with TLS (one shared SSL context), "
              f"{without / 1024:.0f} KiB without: TLS adds {added / 1024:.0f} KiB   "
              f"target < {TARGETS['memory'] // 1024} KiB: {verdict(added, TARGETS['memory'])}"
              + ("" if added <= TARGETS["memory"] else
                 " (OpenSSL's buffers and session of each connection; the context is shared)"))
    finally:
        child.terminate()
        child.join(10)


if __name__ == "__main__":
    main()
