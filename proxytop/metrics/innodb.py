"""InnoDB flushing arithmetic, pure: status-text parsing, flavour detection, redo-log limits.

Nothing here talks to a server. The collectors (proxytop.collectors.innodb) hand over what
they read — SHOW GLOBAL STATUS and VARIABLES as mappings, the parsed SHOW ENGINE INNODB STATUS,
INNODB_METRICS counters — and :func:`assess` turns two consecutive readings into the values
the InnoDB screen shows, saying where each came from and what the user's privileges hide.

Limits follow each server's own integer arithmetic (see the docstrings for worked numbers);
the server's own figures are preferred whenever it exposes them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from proxytop.metrics.rates import rate, to_number

MiB = 1024 * 1024
PAGE_SIZE = 16384

OK = "OK"
ASYNC = "ASYNC FLUSH"
SYNC = "SYNC FLUSH"

NEEDS_PROCESS = "needs PROCESS"

# ----- SHOW ENGINE INNODB STATUS ----------------------------------------------------------------

POOL = "BUFFER POOL AND MEMORY"
# The lines read, by section: a pattern and the StatusText fields its numbers give, in order.
_LINES = tuple((section, re.compile(pattern), fields) for section, pattern, fields in (
    ("LOG", r"^Log sequence number\s+(\d+)(?:\s+(\d+))?\s*$", ("lsn",)),
    ("LOG", r"^Log flushed up to\s+(\d+)(?:\s+(\d+))?\s*$", ("flushed_lsn",)),
    ("LOG", r"^Pages flushed up to\s+(\d+)(?:\s+(\d+))?\s*$", ("pages_flushed_lsn",)),
    ("LOG", r"^Last checkpoint at\s+(\d+)(?:\s+(\d+))?\s*$", ("checkpoint_lsn",)),
    ("LOG", r"^Max checkpoint age\s+(\d+)\s*$", ("max_checkpoint_age",)),
    ("LOG", r"^Checkpoint age target\s+(\d+)\s*$", ("checkpoint_age_target",)),
    ("LOG", r"^Modified age\s+(\d+)\s*$", ("modified_age",)),
    ("LOG", r"^Checkpoint age\s+(\d+)\s*$", ("checkpoint_age",)),
    ("LOG", r"^(\d+) pending log (?:flushes|writes), (\d+) pending chkp writes",
     ("pending_log_flushes", "pending_chkp_writes")),
    ("LOG", r"^(\d+) log i/o's done", ("log_ios",)),
    (POOL, r"^Buffer pool size\s+(\d+)\s*$", ("pool_pages",)),
    (POOL, r"^Free buffers\s+(\d+)\s*$", ("free_pages",)),
    (POOL, r"^Database pages\s+(\d+)\s*$", ("database_pages",)),
    (POOL, r"^Modified db pages\s+(\d+)\s*$", ("modified_pages",)),
    (POOL, r"^Pending reads\s+(\d+)\s*$", ("pending_reads",)),
    (POOL, r"^Pending writes: LRU (\d+), flush list (\d+)(?:, single page (\d+))?",
     ("pending_lru", "pending_flush_list", "pending_single_page")),
    ("TRANSACTIONS", r"^History list length (\d+)", ("history_list_length",)),
    ("FILE I/O", r"^Pending flushes \(fsync\) log: (\d+); buffer pool: (\d+)",
     ("pending_fsyncs_log", "pending_fsyncs_pool")),
    ("FILE I/O", r"^Pending flushes \(fsync\):? (\d+)", ("pending_fsyncs",)),
))


@dataclass(frozen=True)
class StatusText:
    """What proxytop reads from SHOW ENGINE INNODB STATUS. Every field may be missing:
    only what the text says is set (versions print different lines)."""

    lsn: Optional[int] = None
    flushed_lsn: Optional[int] = None
    pages_flushed_lsn: Optional[int] = None  # oldest modification still in the flush list
    checkpoint_lsn: Optional[int] = None
    # Percona Server 5.7 only
    max_checkpoint_age: Optional[int] = None
    checkpoint_age_target: Optional[int] = None
    modified_age: Optional[int] = None
    checkpoint_age: Optional[int] = None
    pending_log_flushes: Optional[int] = None
    pending_chkp_writes: Optional[int] = None
    log_ios: Optional[int] = None
    # BUFFER POOL AND MEMORY (the totals, not the per-instance blocks)
    pool_pages: Optional[int] = None
    free_pages: Optional[int] = None
    database_pages: Optional[int] = None
    modified_pages: Optional[int] = None
    pending_reads: Optional[int] = None
    pending_lru: Optional[int] = None
    pending_flush_list: Optional[int] = None
    pending_single_page: Optional[int] = None
    # TRANSACTIONS and FILE I/O
    history_list_length: Optional[int] = None
    pending_fsyncs_log: Optional[int] = None
    pending_fsyncs_pool: Optional[int] = None
    pending_fsyncs: Optional[int] = None
    sections: FrozenSet[str] = frozenset()

    @property
    def age(self) -> Optional[int]:
        """LSN − last checkpoint: the checkpoint age."""
        if self.lsn is None or self.checkpoint_lsn is None:
            return None
        return max(0, self.lsn - self.checkpoint_lsn)

    @property
    def modified_age_computed(self) -> Optional[int]:
        """LSN − "Pages flushed up to": what MySQL 5.7 compares with its flush limits."""
        if self.lsn is None or self.pages_flushed_lsn is None:
            return None
        return max(0, self.lsn - self.pages_flushed_lsn)


def split_sections(text: str) -> Dict[str, List[str]]:
    """The status text by section title ("LOG", "BUFFER POOL AND MEMORY", ...).

    A section starts with a title line between two lines of dashes (or '=' for the banner).

    >>> sorted(split_sections("---\\nLOG\\n---\\nLog sequence number 5\\n"))
    ['LOG']
    """
    lines = text.replace("\r\n", "\n").split("\n")
    sections: Dict[str, List[str]] = {}
    current: Optional[List[str]] = None
    i = 0
    rule = re.compile(r"^[-=]{3,}\s*$")
    while i < len(lines):
        line = lines[i]
        if (rule.match(line) and i + 2 < len(lines) and lines[i + 1].strip()
                and rule.match(lines[i + 2]) and not rule.match(lines[i + 1])):
            title = lines[i + 1].strip()
            current = sections.setdefault(title, [])
            i += 3
            continue
        if current is not None:
            current.append(line.rstrip())
        i += 1
    return sections


def parse_status_text(text: str) -> StatusText:
    """Parse the LOG, BUFFER POOL AND MEMORY, TRANSACTIONS and FILE I/O sections.

    Lines are matched one by one and everything unknown is skipped, so new lines in a new
    version never break the parser; a missing line leaves its field None.

    >>> s = parse_status_text("---\\nLOG\\n---\\nLog sequence number 2000\\nLast checkpoint at  1500\\n")
    >>> s.lsn, s.checkpoint_lsn, s.age, s.flushed_lsn
    (2000, 1500, 500, None)
    """
    sections = split_sections(text or "")
    values: Dict[str, int] = {}
    for section, pattern, fields in _LINES:
        for line in sections.get(section, ()):
            line = line.strip()
            if line.startswith("---BUFFER POOL"):
                break  # per-instance blocks (older layouts): the totals came first
            match = pattern.match(line)
            if match:
                numbers = [int(n) for n in match.groups() if n is not None]
                if len(numbers) > len(fields):  # MySQL 5.0's LSN in two 32-bit halves: "84 3000620880"
                    numbers = [(numbers[0] << 32) + numbers[1]]
                values.update(zip(fields, numbers))
                break
    if "pending_fsyncs_log" in values:
        values["pending_fsyncs"] = values["pending_fsyncs_log"] + values["pending_fsyncs_pool"]
    return StatusText(sections=frozenset(sections), **values)


# ----- flavour and version ----------------------------------------------------------------------

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class Flavour:
    """Which server this is: product and version decide where each value comes from."""

    product: str  # "MySQL", "Percona Server", "MariaDB"
    version: Tuple[int, int, int]
    version_text: str = ""

    @property
    def is_mariadb(self) -> bool:
        return self.product == "MariaDB"

    @property
    def is_percona(self) -> bool:
        return self.product == "Percona Server"

    @property
    def family(self) -> str:
        """'mariadb', 'mysql57' (and older), 'mysql80' (8.0.11–8.0.29) or 'mysql8030' (8.0.30+, 8.4, 9.x).

        >>> [Flavour(p, v).family for p, v in (("MariaDB", (10, 11, 6)), ("MySQL", (5, 7, 44)),
        ...  ("MySQL", (8, 0, 29)), ("Percona Server", (8, 0, 30)), ("MySQL", (8, 4, 0)))]
        ['mariadb', 'mysql57', 'mysql80', 'mysql8030', 'mysql8030']
        """
        if self.is_mariadb:
            return "mariadb"
        if self.version < (8, 0, 0):
            return "mysql57"
        if self.version < (8, 0, 30):
            return "mysql80"
        return "mysql8030"

    @property
    def label(self) -> str:
        """Short, for the table: 'MariaDB 10.11.6', 'Percona 5.7.44', 'MySQL 8.0.36'."""
        product = "Percona" if self.is_percona else self.product
        return f"{product} {'.'.join(str(p) for p in self.version)}"

    @property
    def short(self) -> str:
        """The series in a narrow column: 'Percona 8.0', 'MySQL 8.0.30+', 'MariaDB 10.11'.

        >>> Flavour("Percona Server", (8, 0, 36)).short, Flavour("MariaDB", (10, 6, 18)).short
        ('Percona 8.0.30+', 'MariaDB 10.6')
        """
        return self.series.replace("Percona Server", "Percona")

    @property
    def series(self) -> str:
        """The release series the screen names: 'MySQL 8.0.30+', 'MySQL 8.4', 'MariaDB 10.11'.

        >>> [Flavour(p, v).series for p, v in (("MySQL", (8, 0, 36)), ("MySQL", (8, 0, 20)),
        ...  ("MySQL", (8, 4, 2)), ("MariaDB", (11, 4, 2)), ("Percona Server", (5, 7, 44)))]
        ['MySQL 8.0.30+', 'MySQL 8.0', 'MySQL 8.4', 'MariaDB 11.4', 'Percona Server 5.7']
        """
        major, minor, patch = self.version
        if not self.is_mariadb and (major, minor) == (8, 0) and patch >= 30:
            return f"{self.product} 8.0.30+"
        return f"{self.product} {major}.{minor}"


def detect_flavour(version: Optional[str], version_comment: Optional[str] = "") -> Optional[Flavour]:
    """From @@version and @@version_comment.

    >>> detect_flavour("10.11.6-MariaDB-0+deb12u1-log", "Debian 12").label
    'MariaDB 10.11.6'
    >>> detect_flavour("5.5.5-10.6.18-MariaDB", "").label  # through an old replication-style prefix
    'MariaDB 10.6.18'
    >>> detect_flavour("5.7.44-48-log", "Percona Server (GPL), Release 48, Revision 497f936a373").product
    'Percona Server'
    >>> detect_flavour("8.0.36", "MySQL Community Server - GPL").family
    'mysql8030'
    >>> detect_flavour("garbage") is None
    True
    """
    text = version or ""
    comment = version_comment or ""
    if "mariadb" in text.lower() or "mariadb" in comment.lower():
        # MariaDB 10.x sometimes reports "5.5.5-10.6.18-MariaDB" to old clients.
        text = re.sub(r"^5\.5\.5-", "", text)
        product = "MariaDB"
    elif "percona" in comment.lower() or "percona" in text.lower():
        product = "Percona Server"
    else:
        product = "MySQL"
    match = _VERSION.match(text)
    if not match:
        return None
    return Flavour(product, tuple(int(p) for p in match.groups()), version or "")


# ----- redo log limits --------------------------------------------------------------------------


@dataclass(frozen=True)
class RedoLimits:
    """Capacity and flushing thresholds of one server, in bytes of checkpoint age.

    ``sync_age`` is where flushing turns synchronous: MySQL's max_modified_age_sync, and on
    MariaDB the maximum checkpoint age above which page cleaners flush "furiously".
    """

    capacity: Optional[int]
    async_age: Optional[int]
    sync_age: Optional[int]
    async_origin: str = "computed"  # "server" (read from it) or "computed" (its formula)
    sync_origin: str = "computed"
    formula: str = ""  # which formula computed what was not read


def _align_down(value: int, unit: int) -> int:
    return value - value % unit


def _align_up(value: int, unit: int) -> int:
    return _align_down(value + unit - 1, unit)


def mysql57_limits(file_size: int, files: int = 2, thread_concurrency: int = 0,
                   page_size: int = PAGE_SIZE) -> RedoLimits:
    """MySQL 5.7 (and 5.6, Percona 5.7 without its status variables): log_calc_max_ages().

    cap = files × (file_size − 2048); cap −= cap/10; free = 4 pages × (10 + concurrency) + 8
    pages; margin = cap − free; margin −= margin/10; async = margin − margin/8;
    sync = margin − margin/16. Two 48 MiB files (the 5.7 default):

    >>> l = mysql57_limits(48 * MiB, 2)
    >>> l.capacity, l.async_age, l.sync_age
    (100663296, 70722894, 75774529)
    >>> round(100 * l.async_age / l.capacity, 1), round(100 * l.sync_age / l.capacity, 1)
    (70.3, 75.3)
    """
    cap = files * (file_size - 2048)
    cap -= cap // 10
    free = 4 * page_size * (10 + thread_concurrency) + 8 * page_size
    margin = cap - free
    margin -= margin // 10
    return RedoLimits(files * file_size, margin - margin // 8, margin - margin // 16,
                      formula="MySQL 5.7 formula")


def mysql80_limits(file_size: int, files: int = 2, page_size: int = PAGE_SIZE) -> RedoLimits:
    """MySQL 8.0.11–8.0.29: log_calc_max_ages().

    real = files × size − 2048 × files; safety = min(real/10, 16 MiB); writer = real − safety
    (512-aligned); limit = writer − 5 % of writer; async = limit − limit/8; sync =
    limit − limit/16 (rounded up to 512). Two 48 MiB files give 74.8 % / 80.2 % of the raw size:

    >>> l = mysql80_limits(48 * MiB, 2)
    >>> l.async_age, l.sync_age, round(100 * l.async_age / l.capacity, 1), round(100 * l.sync_age / l.capacity, 1)
    (75305984, 80685056, 74.8, 80.2)
    >>> l = mysql80_limits(1024 * MiB, 2)
    >>> round(100 * l.async_age / l.capacity, 1), round(100 * l.sync_age / l.capacity, 1)
    (82.5, 88.4)
    """
    real = files * file_size - 2048 * files
    safety = min(int(0.1 * real), 256 * 4 * page_size)
    writer = _align_down(real - safety, 512)
    extra = _align_down(int(writer * 0.05), 512)
    limit = writer - extra
    return RedoLimits(files * file_size, _align_up(limit - limit // 8, 512), _align_up(limit - limit // 16, 512),
                      formula="MySQL 8.0 formula")


def mysql8030_limits(capacity: int, page_size: int = PAGE_SIZE) -> RedoLimits:
    """MySQL 8.0.30+ and 8.4 (innodb_redo_log_capacity, 32 files).

    lsn_cap = C × 30/32 − (31 × 2048 + 2 × 64 KiB); hard = lsn_cap − 10 % of one file (C/32),
    512-aligned; soft = 95 % of hard; async = soft − soft/8; sync = soft − soft/16:
    ≈ 77.5 % / 83 % of C.

    >>> l = mysql8030_limits(1024 * MiB)
    >>> l.async_age, l.sync_age, round(100 * l.async_age / l.capacity, 1), round(100 * l.sync_age / l.capacity, 1)
    (833812224, 893370240, 77.7, 83.2)
    >>> round(100 * mysql8030_limits(100 * MiB).async_age / (100 * MiB), 1)
    77.5
    """
    lsn_capacity = capacity * 30 // 32 - (31 * 2048 + 2 * 65536)
    file_size = _align_down(capacity // 32, page_size)
    next_file_margin = _align_up(-(-file_size // 10), 512)
    hard = _align_down(lsn_capacity - next_file_margin, 512)
    soft = _align_down(int(hard * 0.95), 512)
    return RedoLimits(capacity, soft - soft // 8, soft - soft // 16, formula="MySQL 8.0.30+ formula")


def mariadb_limits(file_size: int, page_size: int = PAGE_SIZE, version: Tuple[int, int, int] = (10, 11, 0)) -> RedoLimits:
    """MariaDB 10.5+ (one redo file): log_set_capacity().

    cap = (file_size − header) × 0.9 (header 12288 from 10.8, 2048 before); margin =
    (cap − 48 pages) × 0.9; async = margin − margin/8; above the margin (the server's
    Innodb_checkpoint_max_age) flushing is synchronous. A 96 MiB log, as a live 10.11 reports:

    >>> l = mariadb_limits(96 * MiB)
    >>> l.async_age, l.sync_age
    (70717088, 80819529)
    >>> mariadb_limits(64 * MiB).sync_age  # Innodb_checkpoint_max_age of a live 10.11 with 64 MiB
    53640439
    """
    header = 12288 if version >= (10, 8, 0) else 2048
    size = file_size - header
    cap = size - size // 10
    margin = cap - 48 * page_size
    margin -= margin // 10
    return RedoLimits(file_size, margin - margin // 8, margin, formula=f"MariaDB {'10.8+' if header == 12288 else '10.5'} formula")


def limits_from_margin(margin: int, capacity: Optional[int], mariadb: bool) -> RedoLimits:
    """Limits from a server-reported maximum checkpoint age (Innodb_checkpoint_max_age).

    MariaDB: async = margin − margin/8, synchronous above the margin itself. Percona 5.7:
    async = margin − margin/8, sync = margin − margin/16 (its log_calc_max_ages()).

    >>> l = limits_from_margin(80819529, 96 * MiB, mariadb=True)
    >>> l.async_age, l.sync_age, l.async_origin, l.sync_origin
    (70717088, 80819529, 'computed', 'server')
    >>> limits_from_margin(80000000, None, mariadb=False).sync_age
    75000000
    """
    if mariadb:
        return RedoLimits(capacity, margin - margin // 8, margin, "computed", "server",
                          formula="Innodb_checkpoint_max_age − 1/8")
    return RedoLimits(capacity, margin - margin // 8, margin - margin // 16, "computed", "computed",
                      formula="from Innodb_checkpoint_max_age")


def checkpoint_state(age: Optional[int], limits: Optional[RedoLimits]) -> Optional[str]:
    """OK, ASYNC FLUSH or SYNC FLUSH: where the checkpoint age stands against the limits.

    >>> l = RedoLimits(100, 70, 80)
    >>> [checkpoint_state(a, l) for a in (10, 70, 71, 80, 81)]
    ['OK', 'OK', 'ASYNC FLUSH', 'ASYNC FLUSH', 'SYNC FLUSH']
    >>> checkpoint_state(None, l) is None
    True
    """
    if age is None or limits is None:
        return None
    if limits.sync_age is not None and age > limits.sync_age:
        return SYNC
    if limits.async_age is not None and age > limits.async_age:
        return ASYNC
    if limits.async_age is None and limits.sync_age is None:
        return None
    return OK


def time_to_full(capacity: Optional[float], age: Optional[float], redo_rate: Optional[float]) -> Optional[float]:
    """Seconds until the redo log is full at this write rate: (capacity − age) / rate.

    >>> time_to_full(100 * MiB, 40 * MiB, 2 * MiB)
    30.0
    >>> time_to_full(100, 10, 0) is None, time_to_full(None, 10, 5) is None
    (True, True)
    >>> time_to_full(100, 150, 5)
    0.0
    """
    if capacity is None or age is None or not redo_rate or redo_rate <= 0:
        return None
    return max(0.0, (capacity - age) / redo_rate)


def percent_of(part: Optional[float], whole: Optional[float]) -> Optional[float]:
    """
    >>> percent_of(25, 200), percent_of(1, 0), percent_of(None, 5)
    (12.5, None, None)
    """
    if part is None or not whole:
        return None
    return 100.0 * part / whole


def bar(age: Optional[float], capacity: Optional[float], async_age: Optional[float], sync_age: Optional[float],
        width: int = 40) -> str:
    """A text bar of the checkpoint age across the redo capacity, with the async limit marked
    'A' and the sync limit 'S' (drawn over the fill so they stay visible).

    >>> bar(50, 100, 70, 80, 20)
    '[#########...A.S...]'
    >>> bar(90, 100, 70, 80, 22)
    '[##############A#S#..]'
    >>> bar(None, 100, 70, 80, 12)
    '[.......AS.]'
    """
    inner = max(4, width - 2)
    if not capacity:
        return "[" + "?" * inner + "]"
    cells = ["."] * inner
    filled = 0 if age is None else min(inner, int(round(inner * age / capacity)))
    for i in range(filled):
        cells[i] = "#"
    for limit, mark in ((async_age, "A"), (sync_age, "S")):
        if limit is not None:
            cells[min(inner - 1, max(0, int(inner * limit / capacity)))] = mark
    return "[" + "".join(cells) + "]"


# ----- INNODB_METRICS ---------------------------------------------------------------------------

FLUSH_TYPE_METRICS = (
    ("adaptive", "buffer_flush_adaptive_total_pages"),
    ("sync", "buffer_flush_sync_total_pages"),
    ("background", "buffer_flush_background_total_pages"),
    ("LRU", "buffer_LRU_batch_flush_total_pages"),
)
LIMIT_METRICS = ("log_max_modified_age_async", "log_max_modified_age_sync")
LSN_METRICS = ("log_lsn_current", "log_lsn_last_checkpoint", "log_lsn_last_flush")
OTHER_METRICS = ("buffer_flush_sync_waits", "buffer_flush_n_to_flush_by_age", "trx_rseg_history_len")
ALL_METRICS = tuple(m for _, m in FLUSH_TYPE_METRICS) + LIMIT_METRICS + LSN_METRICS + OTHER_METRICS
ENABLE_HINT = "SET GLOBAL innodb_monitor_enable='buffer_flush_%'"


@dataclass(frozen=True)
class Metric:
    count: Optional[int]
    enabled: bool


def metrics_from_rows(rows: Sequence[Mapping]) -> Dict[str, Metric]:
    """INNODB_METRICS rows (by column name) -> {name: Metric}. MySQL says STATUS='enabled',
    MariaDB ENABLED=1.

    >>> m = metrics_from_rows([{"NAME": "a", "COUNT": "5", "STATUS": "enabled"},
    ...                        {"NAME": "b", "COUNT": "0", "ENABLED": "0"}])
    >>> m["a"], m["b"].enabled
    (Metric(count=5, enabled=True), False)
    """
    metrics = {}
    for row in rows:
        lowered = {str(k).lower(): v for k, v in row.items()}
        name = lowered.get("name")
        if name is None:
            continue
        if "status" in lowered and lowered["status"] is not None:
            enabled = str(lowered["status"]).lower() == "enabled"
        else:
            enabled = to_number(lowered.get("enabled")) == 1
        count = to_number(lowered.get("count"))
        metrics[str(name)] = Metric(int(count) if count is not None else None, enabled)
    return metrics


# ----- one server, assessed ---------------------------------------------------------------------


@dataclass(frozen=True)
class EngineReading:
    """What the engine collector read: the parsed status text and INNODB_METRICS, or why not."""

    text: Optional[StatusText] = None
    metrics: Optional[Mapping[str, Metric]] = None
    text_denied: bool = False  # the user lacks PROCESS for SHOW ENGINE INNODB STATUS
    metrics_denied: bool = False
    text_error: Optional[str] = None
    metrics_error: Optional[str] = None
    # (LRU, flush list) pending writes from INNODB_BUFFER_POOL_STATS, read where the status text
    # is not (MariaDB: every other figure of the text is a status variable there)
    pool_pending: Optional[Tuple[int, int]] = None

    @property
    def needs_process(self) -> bool:
        return self.text_denied or self.metrics_denied


@dataclass(frozen=True)
class Assessment:
    """Everything the InnoDB screen shows for one server. None means "not known (yet)";
    names in ``needs_process`` are values the user's privileges hide."""

    flavour: Optional[Flavour] = None
    lsn: Optional[int] = None
    checkpoint_lsn: Optional[int] = None
    flushed_lsn: Optional[int] = None
    age: Optional[int] = None
    age_source: str = ""
    modified_age: Optional[int] = None  # MySQL/Percona: what their limits are compared with
    limits: Optional[RedoLimits] = None
    age_pct: Optional[float] = None  # of capacity
    async_pct: Optional[float] = None
    sync_pct: Optional[float] = None
    state: Optional[str] = None
    redo_rate: Optional[float] = None  # bytes/s
    redo_rate_source: str = ""
    full_in: Optional[float] = None  # seconds until the sync flush limit (writes stall) at this rate
    log_full_in: Optional[float] = None  # seconds until the age reaches the whole log capacity
    dirty_pages: Optional[float] = None
    total_pages: Optional[float] = None
    dirty_pct: Optional[float] = None
    max_dirty_pct: Optional[float] = None
    max_dirty_lwm: Optional[float] = None
    flushed_rate: Optional[float] = None
    lru_flushed_rate: Optional[float] = None
    io_capacity: Optional[float] = None
    io_capacity_max: Optional[float] = None
    by_type: Optional[Tuple[Tuple[str, Optional[float]], ...]] = None
    by_type_disabled: Tuple[str, ...] = ()
    sync_waits_rate: Optional[float] = None
    pending_lru: Optional[int] = None
    pending_flush_list: Optional[int] = None
    pending_single_page: Optional[int] = None
    pending_fsyncs: Optional[float] = None
    pending_log_fsyncs: Optional[float] = None
    pending_log_writes: Optional[float] = None
    wait_free_rate: Optional[float] = None
    log_waits_rate: Optional[float] = None
    history_list_length: Optional[float] = None
    adaptive_flushing: Optional[bool] = None
    adaptive_flushing_lwm: Optional[float] = None
    flush_log_at_trx_commit: Optional[str] = None
    needs_process: Tuple[str, ...] = ()
    sources: Tuple[Tuple[str, str], ...] = ()  # (value, where it came from), for the detail panel

    def lacks(self, name: str) -> bool:
        return name in self.needs_process


def _num(mapping: Optional[Mapping], key: str) -> Optional[float]:
    if not mapping:
        return None
    return to_number(mapping.get(key))


def _int(value) -> Optional[int]:
    number = to_number(value)
    return None if number is None else int(number)


def _on(value) -> Optional[bool]:
    if value is None:
        return None
    return str(value).strip().upper() in ("ON", "1", "TRUE", "YES")


def redo_capacity(flavour: Optional[Flavour], variables: Mapping) -> Optional[int]:
    """The redo log size the limits refer to.

    >>> redo_capacity(Flavour("MySQL", (8, 0, 36)), {"innodb_redo_log_capacity": "104857600"})
    104857600
    >>> redo_capacity(Flavour("MySQL", (5, 7, 44)), {"innodb_log_file_size": "50331648", "innodb_log_files_in_group": "2"})
    100663296
    >>> redo_capacity(Flavour("MariaDB", (10, 11, 6)), {"innodb_log_file_size": "100663296"})
    100663296
    """
    capacity = _int(variables.get("innodb_redo_log_capacity"))
    if capacity and (flavour is None or flavour.family == "mysql8030"):
        return capacity
    size = _int(variables.get("innodb_log_file_size"))
    if not size:
        return capacity or None
    if flavour is not None and flavour.is_mariadb:
        return size
    return size * (_int(variables.get("innodb_log_files_in_group")) or 2)


def computed_limits(flavour: Optional[Flavour], variables: Mapping) -> Optional[RedoLimits]:
    """The version's own formula, from the server's variables."""
    if flavour is None:
        return None
    page = _int(variables.get("innodb_page_size")) or PAGE_SIZE
    size = _int(variables.get("innodb_log_file_size"))
    files = _int(variables.get("innodb_log_files_in_group")) or 2
    if flavour.family == "mysql8030":
        # 8.0.30+ still honours the old two variables when innodb_redo_log_capacity is unset
        capacity = _int(variables.get("innodb_redo_log_capacity")) or (size * files if size else None)
        return mysql8030_limits(capacity, page) if capacity else None
    if not size:
        return None
    if flavour.family == "mariadb":
        if flavour.version >= (10, 5, 0):
            return mariadb_limits(size, page, flavour.version)
        return mysql57_limits(size, files, 0, page)  # 10.4 and older kept the 5.7 arithmetic
    if flavour.family == "mysql80":
        return mysql80_limits(size, files, page)
    return mysql57_limits(size, files, _int(variables.get("innodb_thread_concurrency")) or 0, page)


def server_limits(flavour: Optional[Flavour], status: Mapping, variables: Mapping,
                  metrics: Optional[Mapping[str, Metric]]) -> Optional[RedoLimits]:
    """The server's own limits where it exposes them, else its formula (marked computed).

    >>> mariadb = Flavour("MariaDB", (10, 11, 6))
    >>> server_limits(mariadb, {}, {"innodb_log_file_size": str(96 * MiB)}, None).sync_age
    80819529
    >>> server_limits(mariadb, {}, {"innodb_log_file_size": str(64 * MiB)}, None).sync_age  # resized
    53640439
    """
    capacity = redo_capacity(flavour, variables)
    computed = computed_limits(flavour, variables)
    reported_max = _int(status.get("Innodb_checkpoint_max_age"))
    base: Optional[RedoLimits] = None
    if reported_max and flavour is not None and (flavour.is_mariadb or (flavour.is_percona and flavour.version < (8, 0, 0))):
        base = limits_from_margin(reported_max, capacity, flavour.is_mariadb)
    elif computed is not None:
        base = computed
    metric_async = metrics.get("log_max_modified_age_async") if metrics else None
    metric_sync = metrics.get("log_max_modified_age_sync") if metrics else None
    async_age = base.async_age if base else None
    sync_age = base.sync_age if base else None
    async_origin = base.async_origin if base else "computed"
    sync_origin = base.sync_origin if base else "computed"
    if metric_async is not None and metric_async.enabled and metric_async.count:
        async_age, async_origin = metric_async.count, "server"
    if metric_sync is not None and metric_sync.enabled and metric_sync.count and not (flavour and flavour.is_mariadb):
        sync_age, sync_origin = metric_sync.count, "server"
    if async_age is None and sync_age is None:
        return None
    return RedoLimits(capacity if capacity else (computed.capacity if computed else None), async_age, sync_age,
                      async_origin, sync_origin, base.formula if base else "")


def _lsns(status: Mapping, text: Optional[StatusText], metrics: Optional[Mapping[str, Metric]]):
    """(lsn, checkpoint_lsn, flushed_lsn, source): status variables first."""
    for current, checkpoint, flushed in (("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn",
                                          "Innodb_redo_log_flushed_to_disk_lsn"),
                                         ("Innodb_lsn_current", "Innodb_lsn_last_checkpoint", "Innodb_lsn_flushed")):
        lsn = _int(status.get(current))
        if lsn is not None:
            return lsn, _int(status.get(checkpoint)), _int(status.get(flushed)), "status variables"
    if text is not None and text.lsn is not None:
        return text.lsn, text.checkpoint_lsn, text.flushed_lsn, "SHOW ENGINE INNODB STATUS"
    if metrics:
        current = metrics.get("log_lsn_current")
        checkpoint = metrics.get("log_lsn_last_checkpoint")
        if current is not None and current.enabled and current.count and checkpoint is not None and checkpoint.enabled:
            flushed = metrics.get("log_lsn_last_flush")
            return (current.count, checkpoint.count, flushed.count if flushed and flushed.enabled else None,
                    "INNODB_METRICS")
    return None, None, None, ""


def assess(status: Optional[Mapping], previous_status: Optional[Mapping], status_seconds: Optional[float],
           variables: Optional[Mapping], engine: Optional[EngineReading] = None,
           previous_engine: Optional[EngineReading] = None, engine_seconds: Optional[float] = None,
           flavour: Optional[Flavour] = None) -> Assessment:
    """Turn the latest readings (and the ones before, for rates) into the screen's values.

    ``status``: SHOW GLOBAL STATUS (at least the Innodb% rows); ``variables``: the subset of
    SHOW GLOBAL VARIABLES the vars collector reads; ``engine``: the engine collector's
    reading; the ``*_seconds`` are the time between the two snapshots of each collector.

    >>> variables = {"version": "10.11.6-MariaDB", "innodb_log_file_size": 100 * 2**20}
    >>> [assess({"Innodb_checkpoint_age": mb * 2**20}, None, None, variables).state for mb in (10, 80, 95)]
    ['OK', 'ASYNC FLUSH', 'SYNC FLUSH']
    """
    status = status or {}
    variables = variables or {}
    if flavour is None:
        flavour = detect_flavour(variables.get("version"), variables.get("version_comment"))
    engine = engine or EngineReading()
    text, metrics = engine.text, engine.metrics
    needs: List[str] = []  # what the user's privileges hide, in the order the screen lists them
    sources: List[Tuple[str, str]] = []  # (value, where it came from), for the detail panel

    def per_second(name: str) -> Optional[float]:
        return rate(previous_status.get(name), status.get(name), status_seconds) if previous_status else None

    def metric_rate(name: str) -> Optional[float]:
        metric = metrics.get(name)
        before = previous_engine.metrics.get(name) if previous_engine and previous_engine.metrics else None
        if metric is None or before is None or not metric.enabled or not before.enabled:
            return None
        return rate(before.count, metric.count, engine_seconds)

    # The checkpoint age: the status variable, else LSN − last checkpoint from wherever the LSNs are.
    lsn, checkpoint_lsn, flushed_lsn, lsn_source = _lsns(status, text, metrics)
    age = _int(status.get("Innodb_checkpoint_age"))
    age_source = "Innodb_checkpoint_age" if age is not None else ""
    if age is None and lsn is not None and checkpoint_lsn is not None:
        age, age_source = max(0, lsn - checkpoint_lsn), f"LSN − last checkpoint ({lsn_source})"
    if lsn_source:
        sources.append(("LSN", lsn_source))
    if age is not None:
        sources.append(("checkpoint age", age_source))
    elif engine.text_denied:
        needs.append("age")
    # MySQL and Percona compare the *modified* age (LSN − oldest dirty page, "Pages flushed up
    # to") with their limits; MariaDB compares the checkpoint age.
    modified_age = None
    if text is not None and not (flavour is not None and flavour.is_mariadb):
        modified_age = text.modified_age if text.modified_age is not None else text.modified_age_computed
    compared_age = modified_age if modified_age is not None else age

    limits = server_limits(flavour, status, variables, metrics)
    capacity = limits.capacity if limits else redo_capacity(flavour, variables)
    if limits is not None:
        for name, origin in (("async limit", limits.async_origin), ("sync limit", limits.sync_origin)):
            sources.append((name, f"computed: {limits.formula}" if origin == "computed" and limits.formula else origin))

    # Redo written per second: Δ LSN from the status variables, else from the status text,
    # else Innodb_os_log_written.
    redo_rate, redo_source = None, ""
    for name in ("Innodb_redo_log_current_lsn", "Innodb_lsn_current"):
        if previous_status and name in status and name in previous_status:
            redo_rate, redo_source = per_second(name), "Δ LSN"
            break
    if redo_rate is None and lsn_source == "SHOW ENGINE INNODB STATUS" and previous_engine is not None \
            and previous_engine.text is not None:
        redo_rate, redo_source = rate(previous_engine.text.lsn, lsn, engine_seconds), "Δ LSN"
    if redo_rate is None and previous_status and "Innodb_os_log_written" in status:
        redo_rate, redo_source = per_second("Innodb_os_log_written"), "Innodb_os_log_written"

    # The flush writes queued, by list: from the status text, else INNODB_BUFFER_POOL_STATS.
    pending_lru = pending_flush_list = pending_single_page = None
    if text is not None:
        pending_lru, pending_flush_list, pending_single_page = \
            text.pending_lru, text.pending_flush_list, text.pending_single_page
        sources.append(("pending writes", "SHOW ENGINE INNODB STATUS"))
    elif engine.pool_pending is not None:
        pending_lru, pending_flush_list = engine.pool_pending
        sources.append(("pending writes", "INNODB_BUFFER_POOL_STATS"))
    elif engine.text_denied:
        needs.append("pending_writes")

    # Pages flushed per second by flush type (INNODB_METRICS; its counters may be off).
    by_type, disabled, sync_waits = None, (), None
    if metrics is not None:
        disabled = tuple(name for _, name in FLUSH_TYPE_METRICS if not getattr(metrics.get(name), "enabled", False))
        if len(disabled) < len(FLUSH_TYPE_METRICS):
            by_type = tuple((label, metric_rate(name)) for label, name in FLUSH_TYPE_METRICS)
        sync_waits = metric_rate("buffer_flush_sync_waits")
        sources.append(("flushing by type", "INNODB_METRICS"))
    elif engine.metrics_denied:
        needs.append("by_type")

    # The purge backlog: the status variable, else INNODB_METRICS, else the status text.
    history, history_source = _num(status, "Innodb_history_list_length"), "Innodb_history_list_length"
    metric = metrics.get("trx_rseg_history_len") if metrics else None
    if history is None and metric is not None and metric.enabled:
        history, history_source = metric.count, "INNODB_METRICS"
    if history is None and text is not None:
        history, history_source = text.history_list_length, "SHOW ENGINE INNODB STATUS"
    if history is not None:
        sources.append(("history list", history_source))
    elif engine.needs_process:
        needs.append("history_list_length")

    pending_fsyncs = _num(status, "Innodb_data_pending_fsyncs")
    if pending_fsyncs is None and text is not None:
        pending_fsyncs = text.pending_fsyncs
    if status:
        sources.append(("pages and waits", "SHOW GLOBAL STATUS"))
    dirty, total = _num(status, "Innodb_buffer_pool_pages_dirty"), _num(status, "Innodb_buffer_pool_pages_total")
    return Assessment(
        flavour=flavour, lsn=lsn, checkpoint_lsn=checkpoint_lsn, flushed_lsn=flushed_lsn,
        age=age, age_source=age_source, modified_age=modified_age, limits=limits,
        age_pct=percent_of(age, capacity),
        async_pct=percent_of(limits.async_age, capacity) if limits else None,
        sync_pct=percent_of(limits.sync_age, capacity) if limits else None,
        state=checkpoint_state(compared_age, limits),
        redo_rate=redo_rate, redo_rate_source=redo_source,
        # "Full in" is where writes stall: the sync flush limit (MariaDB's own margin, about 12%
        # below the log's capacity), against the age that limit is compared with.
        full_in=time_to_full(limits.sync_age if limits else None, compared_age, redo_rate),
        log_full_in=time_to_full(capacity, age, redo_rate),
        dirty_pages=dirty, total_pages=total, dirty_pct=percent_of(dirty, total),
        max_dirty_pct=_num(variables, "innodb_max_dirty_pages_pct"),
        max_dirty_lwm=_num(variables, "innodb_max_dirty_pages_pct_lwm"),
        flushed_rate=per_second("Innodb_buffer_pool_pages_flushed"),
        lru_flushed_rate=per_second("Innodb_buffer_pool_pages_lru_flushed")
        if "Innodb_buffer_pool_pages_lru_flushed" in status else None,
        io_capacity=_num(variables, "innodb_io_capacity"), io_capacity_max=_num(variables, "innodb_io_capacity_max"),
        by_type=by_type, by_type_disabled=disabled, sync_waits_rate=sync_waits,
        pending_lru=pending_lru, pending_flush_list=pending_flush_list, pending_single_page=pending_single_page,
        pending_fsyncs=pending_fsyncs,
        pending_log_fsyncs=_num(status, "Innodb_os_log_pending_fsyncs"),
        pending_log_writes=_num(status, "Innodb_os_log_pending_writes"),
        wait_free_rate=per_second("Innodb_buffer_pool_wait_free"), log_waits_rate=per_second("Innodb_log_waits"),
        history_list_length=history,
        adaptive_flushing=_on(variables.get("innodb_adaptive_flushing")),
        adaptive_flushing_lwm=_num(variables, "innodb_adaptive_flushing_lwm"),
        flush_log_at_trx_commit=variables.get("innodb_flush_log_at_trx_commit"),
        needs_process=tuple(needs), sources=tuple(sources),
    )
