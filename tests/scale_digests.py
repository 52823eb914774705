"""A digest table of 20,000 rows for scale tests and benchmarks, shaped like the recorded ones.

``double.transforms["stats_mysql_query_digest"] = ScaleDigests(recording)`` replaces each
served frame of the digest with generated rows: every recorded row is a template (hostgroup,
schema, user, digest text with its table names renumbered, latencies), each generated digest
gets its own hash, and the counters grow with every read at the template's pace, so rates,
grouping and resets behave as on a busy ProxySQL. Two thirds of the digests run in every
interval; ``changing=0.1`` makes only that share of them run (the rest idle), as on a real
ProxySQL, where most of a large digest table is idle at any moment. ``new_per_read=2`` adds
that many digests before each read after the first, at random places (ProxySQL's digest map is a
hash map: a new digest's row can land anywhere in the table), as new query shapes appear.
"""
from __future__ import annotations

import random
import re
import threading
from typing import List, Optional, Sequence, Tuple

DIGEST_COLUMNS = ("hostgroup", "schemaname", "username", "client_address", "digest", "digest_text", "count_star",
                  "first_seen", "last_seen", "sum_time", "min_time", "max_time", "sum_rows_affected", "sum_rows_sent")
_TABLE = re.compile(r"\b(sbtest|t_tmp|no_such_table)(\d*)")


def templates(recording) -> List[dict]:
    """The recorded digest rows (the last frame) as dicts."""
    columns, rows = recording.series["stats_mysql_query_digest"][-1]
    return [dict(zip(columns, row)) for row in rows if row]


class ScaleDigests:
    """A stateful transform: frame n has counters n intervals further on."""

    def __init__(self, recording, digests: int = 20_000, seed: int = 7, seconds_per_read: float = 5.0,
                 start: int = 1_795_385_000, changing: Optional[float] = None, new_per_read: int = 0):
        self.lock = threading.Lock()
        self.reads = 0
        self.seconds = seconds_per_read
        self.start = start
        shapes = templates(recording)
        self.shapes = shapes
        self.new_per_read = new_per_read
        self.added = random.Random(seed + 2)  # where and what the new digests are
        rng = random.Random(seed)
        share = random.Random(seed + 1)  # its own draws: the default shape stays as it was
        self.rows: List[Tuple] = []
        for n in range(digests):
            self.rows.append(self.generated(n, rng, share, changing))

    def generated(self, n: int, rng: random.Random, share: random.Random, changing: Optional[float],
                  since: int = 0) -> Tuple:
        """Digest number ``n``, first seen at read ``since``."""
        shapes = self.shapes
        shape = shapes[n % len(shapes)]
        text = _TABLE.sub(lambda m: f"{m.group(1)}{n}", shape["digest_text"] or "SELECT ?")
        count = max(1, int(shape["count_star"] or 1))
        mean = max(1, int(shape["sum_time"] or 1) // count)
        sent = int(shape["sum_rows_sent"] or 0) // count
        affected = int(shape["sum_rows_affected"] or 0) // count
        per_read = rng.choice((0, 0, 1, 2, 5, 20))
        if changing is not None:
            per_read = share.choice((1, 2, 5, 20)) if share.random() < changing else 0
        return (shape["hostgroup"], shape["schemaname"], shape["username"], "",
                f"0x{rng.getrandbits(64):016X}", text, count - per_read * since, mean, sent, affected, per_read,
                int(shape["min_time"] or 1), int(shape["max_time"] or 1))

    def frame(self, reads: int) -> List[list]:
        now = self.start + int(reads * self.seconds)
        out = []
        for hostgroup, schema, user, client, digest, text, count, mean, sent, affected, per_read, low, high in self.rows:
            total = count + per_read * reads
            out.append([hostgroup, schema, user, client, digest, text, str(total), str(self.start),
                        str(now if per_read else self.start), str(total * mean), str(low), str(high),
                        str(total * affected), str(total * sent)])
        return out

    def __call__(self, columns: Sequence[str], rows) -> Tuple[List[str], List[list]]:
        with self.lock:
            self.reads += 1
            reads = self.reads
            if reads > 1:
                for _ in range(self.new_per_read):
                    number = len(self.rows)
                    row = self.generated(number, self.added, self.added, None, since=reads)
                    self.rows.insert(self.added.randrange(number + 1), row)
        return list(DIGEST_COLUMNS), self.frame(reads)
