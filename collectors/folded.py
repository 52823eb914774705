"""One query for the two readings every refresh of ConnPool takes: the header's rows of
stats_mysql_global and stats_mysql_connection_pool (each side's, on ProxySQL 3.x).

Each query to the admin interface has a fixed cost in proxytop (PyMySQL's sending, reading and
decoding, the column definitions, the thread's wake-up) about as large as decoding a dozen
rows. When both readings are due in the same batch, the first of the two collectors to run
sends ::

    select 'pool', count(*), group_concat("hostgroup" || ',' || "srv_host" || ',' || ...)
    from stats_mysql_connection_pool
    union all select 'header', count(*), group_concat(Variable_Name || ',' || Variable_Value)
    from stats_mysql_global where Variable_Name in (...)

and keeps the other's part for it (:func:`read`). ProxySQL refreshes every stats table whose
name the query text has (ProxySQL_Admin::GenericRefreshStatistics tests each name in turn), so
both tables are as fresh as with two queries, and ProxySQL answers one query instead of two.
Each table comes as one row of three columns: which table, how many rows, and every value of
its rows, row after row, joined by commas (no value of the pool has one): split here in C
instead of a dozen row packets of fourteen values decoded one by one, and three column
definitions read instead of fifteen (a column's definition costs PyMySQL as much as a few
values). A row with a NULL (``||`` makes the whole row NULL, and group_concat leaves it out) or
a value with a comma gives another number of values than its count says: that table is then
read by itself for that reading.

The union needs the pool's columns (their names and number differ between versions): a
connection's first pool reading is a plain ``select *``, and the readings after it are
combined. A ProxySQL that refuses the combined query gets the two plain queries from then on.

The monitor logs, due every other second, keep their own query: joined to this one as a third
part, the worker's readings cost more CPU in the running program, not less (720 µs a second
against 650: the monitor's rows padded to the pool's width).

The reading served from the other's query is stamped with the time that query started (the
engine takes ``served_at``): its rates span the same interval as if it had been read itself.
"""
from __future__ import annotations

import time
from typing import Dict, Optional, Sequence, Tuple

from proxytop import errors
from proxytop.core import Table
from proxytop.polling.connection import Folding

POOL_SUFFIX = "_connection_pool"
GLOBAL_SUFFIX = "_global"


def partner_table(table: str) -> str:
    """The table read with ``table``: the pool's for the global status and the other way round.

    >>> partner_table("stats_pgsql_global"), partner_table("stats_mysql_connection_pool")
    ('stats_pgsql_connection_pool', 'stats_mysql_global')
    """
    if table.endswith(GLOBAL_SUFFIX):
        return table[: -len(GLOBAL_SUFFIX)] + POOL_SUFFIX
    return table[: -len(POOL_SUFFIX)] + GLOBAL_SUFFIX


def combined_sql(pool_table: str, pool_names: Sequence[str], header) -> str:
    """The pool's rows as one row ('pool', how many, their values joined by commas row after
    row), then the header's rows the same way ('header', ...).

    >>> from proxytop.collectors.proxysql import HeaderStatus
    >>> sql = combined_sql("stats_mysql_connection_pool", ("hostgroup", "srv_host", "status"), HeaderStatus())
    >>> print(sql[:sql.index(" from stats_mysql_global")])
    select 'pool', count(*), group_concat("hostgroup" || ',' || "srv_host" || ',' || "status") from stats_mysql_connection_pool union all select 'header', count(*), group_concat(Variable_Name || ',' || Variable_Value)
    >>> sql.endswith(HeaderStatus().sql()[len("select * from stats_mysql_global"):])
    True
    """
    narrow = header.sql()
    where = narrow[narrow.index(header.table) + len(header.table):]
    joined = " || ',' || ".join(f'"{name}"' for name in pool_names)
    return (f"select 'pool', count(*), group_concat({joined}) from {pool_table} union all "
            f"select 'header', count(*), group_concat(Variable_Name || ',' || Variable_Value) "
            f"from {header.table}{where}")


HEADER_COLUMNS = ("Variable_Name", "Variable_Value")


def unjoined(names: Sequence[str], count, joined: Optional[str]) -> Optional[Table]:
    """A table sent as one text: ``count`` rows of ``names``' values joined by commas, row after
    row. None when ``count`` is no number or the text has another number of values.

    >>> unjoined(("id", "hits"), "2", "1,10,2,0")
    Table(columns=('id', 'hits'), rows=(('1', '10'), ('2', '0')))
    >>> unjoined(("id", "hits"), "0", None).rows, unjoined(("id", "hits"), "2", "1,10")
    ((), None)
    """
    try:
        count = int(count)
    except (TypeError, ValueError):
        return None
    values = joined.split(",") if joined is not None else []
    width = len(names)
    if len(values) != count * width:
        return None
    return Table(tuple(names), tuple(tuple(values[at:at + width]) for at in range(0, len(values), width)))


def split(table: Table, pool_names: Sequence[str]) -> Tuple[Optional[Table], Optional[Dict[str, str]]]:
    """The combined result as the pool's Table and the header's {Variable_Name: Variable_Value},
    each None when its values don't line up with its count (a row with a NULL left out, a
    value with a comma): that one is then read plainly.

    >>> t = Table(("pool", "count(*)", "group_concat"), (("pool", "2", "10,db1,3306,20,db2,3307"),
    ...                                                  ("header", "2", "Questions,42,Active_Transactions,3")))
    >>> split(t, ("hostgroup", "srv_host", "srv_port"))
    (Table(columns=('hostgroup', 'srv_host', 'srv_port'), rows=(('10', 'db1', '3306'), ('20', 'db2', '3307'))), {'Questions': '42', 'Active_Transactions': '3'})
    >>> split(Table(("pool", "n", "j"), (("pool", "2", "10,db1"), ("header", "1", "Questions,4,2"))), ("hostgroup", "srv_host"))
    (None, None)
    """
    pool = header = None
    for kind, count, joined in table.rows:
        if kind == "pool":
            pool = unjoined(pool_names, count, joined)
        else:
            variables = unjoined(HEADER_COLUMNS, count, joined)
            header = dict(variables.rows) if variables is not None else None
    return pool, header


def read(session, collector, plain):
    """``collector``'s reading (the header's or the pool's): kept for it from its partner's
    query in this batch, or read with its partner's when that is due too, or ``plain(session)``."""
    folding: Optional[Folding] = getattr(session, "folding", None)
    if folding is None:
        return plain(session)
    kept = folding.kept.pop(collector.name, None)
    if kept is not None:
        data, started, wall = kept
        collector.served_at = (started, wall)
        return data
    folding.collectors[collector.table] = collector
    partner = folding.collectors.get(partner_table(collector.table))
    is_pool = collector.table.endswith(POOL_SUFFIX)
    pool_table = collector.table if is_pool else partner_table(collector.table)
    names = folding.pool_columns.get(pool_table, ())
    if folding.refused or partner is None or partner.name not in folding.due or not names:
        data = plain(session)
        if is_pool and isinstance(data, Table):
            folding.pool_columns[pool_table] = data.columns
        return data
    header = partner if is_pool else collector
    started, wall = folding.clock(), time.time()
    try:
        pool, rows = split(session.query(combined_sql(pool_table, names, header)), names)
    except Exception as exc:
        if errors.is_connection_error(exc) or errors.is_passing(exc):
            raise
        folding.refused = True  # e.g. a ProxySQL whose admin interface has no UNION ALL
        return read(session, collector, plain)
    if pool is None:  # a NULL in the pool (its row left out): its rows read by themselves
        pool = session.query(f"select * from {pool_table}")
    if rows is None:  # a header's value with a comma, or NULL: its rows read by themselves
        rows = header.read_plainly(session)
    folding.kept[partner.name] = (rows if is_pool else pool, started, wall)
    return pool if is_pool else rows
