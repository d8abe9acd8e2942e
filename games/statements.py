"""The move path's statements, built once per database connection instead of once per request:
the ORM builds a query's SQL anew each time it runs, which cost more than the move's database
round trips did. A `Compiled` read is a queryset compiled to SQL the first time a connection
runs it, then only executed, its rows turned into model instances as the queryset would have
(converters, select_related objects). `rows_insert`, `rows_update`, `rows_delete` and
`rows_replace` write rows in one short statement each; inside `writes_together` (PostgreSQL),
the writes of a move go to the database together, as one statement."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from weakref import WeakKeyDictionary

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, QuerySet
from django.db.models.query import get_related_populators

M = TypeVar("M", bound=Model)


class _Plan:
    """One connection's compiled form of a read: its SQL, where each marker goes in its
    parameters, the converters of its columns and how a row becomes objects."""

    def __init__(self, queryset: QuerySet[Any], alias: str, markers: Sequence[object]) -> None:
        compiler = queryset.query.get_compiler(using=alias)
        self.compiler = compiler
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        self.slots: list[int] = []
        for marker in markers:
            where = [i for i, p in enumerate(self.params) if p == marker]
            if len(where) != 1:
                raise ValueError(f"the marker {marker!r} is not one parameter of {self.sql}")
            self.slots.append(where[0])
        if len(self.slots) != len(self.params):
            raise ValueError(f"every parameter of {self.sql} must be a marker")
        self.converters = compiler.get_converters([s[0] for s in compiler.select])
        klass_info = compiler.klass_info
        assert klass_info is not None
        self.model: type[Model] = klass_info["model"]
        fields = klass_info["select_fields"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.names = [f[0].target.attname for f in compiler.select[self.start : self.end]]
        # (django-stubs follow a later Django, whose version takes a fetch mode too.)
        self.populators = get_related_populators(  # type: ignore[call-arg]
            klass_info, compiler.select, alias
        )


class Compiled(Generic[M]):
    """A read that `build(*markers)` makes into a queryset: every parameter of its SQL must be
    one of the markers (distinct values found nowhere else in it), and `fetch(*values)` runs
    it with each marker's value, as `list(build(*values))` would, without building it again."""

    def __init__(self, build: Callable[..., QuerySet[M]], *markers: object) -> None:
        self._build = build
        self._markers = markers
        self._plans: WeakKeyDictionary[BaseDatabaseWrapper, _Plan] = WeakKeyDictionary()

    def fetch(self, *values: object, alias: str) -> list[M]:
        connection = connections[alias]
        plan = self._plans.get(connection)
        if plan is None:
            plan = _Plan(self._build(*self._markers), alias, self._markers)
            self._plans[connection] = plan
        params = list(plan.params)
        for slot, value in zip(plan.slots, values, strict=True):
            params[slot] = value
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            rows: Any = cursor.fetchall()
        if plan.converters:
            rows = plan.compiler.apply_converters(rows, plan.converters)
        found: list[M] = []
        for row in rows:
            obj: Any = plan.model.from_db(alias, plan.names, row[plan.start : plan.end])
            for populator in plan.populators:
                populator.populate(row, obj)
            found.append(obj)
        return found


def rows_insert(
    rows: Sequence[Model],
    *,
    ignore_conflicts: bool = False,
    then: Callable[[list[Any]], None] | None = None,
) -> None:
    """Insert these new rows of one model in one INSERT ... RETURNING: what `bulk_create`
    does, without its query building. Each row is given its id, unless `ignore_conflicts` (ON
    CONFLICT DO NOTHING: a row that would break a unique constraint is not inserted); `then`
    is given the ids of the rows inserted, at once or, inside `writes_together`, when the batch
    is sent. Fields with a database default only (no Python default) are not supported: every
    concrete field but the id is written."""
    if not rows:
        if then is not None:
            then([])
        return
    meta = rows[0]._meta
    model = type(rows[0])
    alias = router.db_for_write(model)
    connection = connections[alias]
    quote = connection.ops.quote_name
    assert meta.pk is not None
    sql, params = _insert_sql(rows, connection)
    sql += f"{_IGNORED if ignore_conflicts else ''} RETURNING {quote(str(meta.pk.column))}"

    def inserted(ids: list[Any]) -> None:
        if not ignore_conflicts:
            for row, pk in zip(rows, ids, strict=True):
                row.pk = pk
                row._state.adding = False
                row._state.db = alias
        if then is not None:
            then(ids)

    _write(connection, [_Piece(meta.db_table, sql, params, inserted)])


def _insert_sql(rows: Sequence[Model], connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
    """INSERT INTO ... VALUES of these new rows of one model, every concrete field but the id."""
    meta = rows[0]._meta
    quote = connection.ops.quote_name
    columns: list[Field[Any, Any]] = [
        f for f in meta.concrete_fields if not f.primary_key and isinstance(f, Field)
    ]
    for row in rows:
        for field in columns:
            field.pre_save(row, add=True)  # auto_now_add and the like
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(str(f.column)) for f in columns)})"
        f" VALUES {', '.join([one] * len(rows))}"
    )
    params = [
        field.get_db_prep_save(getattr(row, field.attname), connection)
        for row in rows
        for field in columns
    ]
    return sql, params


def rows_update(rows: Sequence[Model], fields: Sequence[str]) -> None:
    """Save these fields of these rows of one model, in one statement: on PostgreSQL an
    UPDATE ... FROM (VALUES ...) with a row of values each, elsewhere the same short UPDATE
    for each row, sent together (executemany). Django's bulk_update builds one CASE per field
    and row out of expressions, which takes longer than the sweep's whole budget for a batch."""
    if not rows:
        return
    meta = rows[0]._meta
    connection = connections[router.db_for_write(type(rows[0]))]
    quote = connection.ops.quote_name
    columns: list[Field[Any, Any]] = []
    for name in fields:
        field = meta.get_field(name)
        assert isinstance(field, Field)
        columns.append(field)
    assert meta.pk is not None
    table, pk = quote(meta.db_table), quote(str(meta.pk.column))
    values = [
        [field.get_db_prep_save(getattr(row, field.attname), connection) for field in columns]
        + [row.pk]
        for row in rows
    ]
    if len(rows) == 1 or connection.vendor != "postgresql":
        sets = ", ".join(f"{quote(str(field.column))} = %s" for field in columns)
        sql = f"UPDATE {table} SET {sets} WHERE {pk} = %s"
        if len(rows) == 1:
            _write(connection, [_Piece(meta.db_table, sql, values[0])])
        else:
            with connection.cursor() as cursor:
                cursor.executemany(sql, values)
        return
    # Each value cast to its column's type: a NULL in VALUES has none of its own.
    casts = [f"%s::{field.cast_db_type(connection)}" for field in columns]
    first = f"({', '.join([*casts, f'%s::{meta.pk.cast_db_type(connection)}'])})"
    more = f"({', '.join(['%s'] * (len(columns) + 1))})"
    names = [f"c{i}" for i in range(len(columns))]
    sets = ", ".join(
        f"{quote(str(field.column))} = v.{name}" for field, name in zip(columns, names, strict=True)
    )
    rows_sql = ", ".join([first] + [more] * (len(rows) - 1))
    sql = (
        f"UPDATE {table} SET {sets} FROM (VALUES {rows_sql})"
        f" AS v({', '.join(names)}, id) WHERE {table}.{pk} = v.id"
    )
    _write(connection, [_Piece(meta.db_table, sql, [p for row in values for p in row])])


def rows_delete(model: type[Model], field: str, values: Sequence[object]) -> None:
    """Delete the rows of `model` whose `field` is one of `values`, in one DELETE: for a
    model that nothing refers to, no Collector needed."""
    if not values:
        return
    connection = connections[router.db_for_write(model)]
    with connection.cursor() as cursor:
        cursor.execute(*_delete_sql(model, field, values, connection))


def rows_replace(
    model: type[Model], field: str, values: Sequence[object], rows: Sequence[Model]
) -> None:
    """`rows_delete(model, field, values)`, then `rows_insert(rows, ignore_conflicts=True)`:
    on PostgreSQL in one statement (the DELETE in a WITH), so the new rows must not be among
    those deleted (they would be kept: both parts see the table as it was)."""
    connection = connections[router.db_for_write(model)]
    if not values or not rows or connection.vendor != "postgresql":
        rows_delete(model, field, values)
        rows_insert(rows, ignore_conflicts=True)
        return
    meta = model._meta
    delete, params = _delete_sql(model, field, values, connection)
    insert, more = _insert_sql(rows, connection)
    _write(
        connection,
        [_Piece(meta.db_table, delete, params), _Piece(meta.db_table, insert + _IGNORED, more)],
    )


_IGNORED = " ON CONFLICT DO NOTHING"


def _delete_sql(
    model: type[Model], field: str, values: Sequence[object], connection: BaseDatabaseWrapper
) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    column = model._meta.get_field(field)
    assert isinstance(column, Field)
    marks = ", ".join(["%s"] * len(values))
    table = quote(model._meta.db_table)
    return f"DELETE FROM {table} WHERE {quote(str(column.column))} IN ({marks})", list(values)


# --- writes sent together ----------------------------------------------------------------------


@dataclass
class _Piece:
    """One write: its table, its SQL and parameters, and for an INSERT ... RETURNING (the id)
    what is given the ids."""

    table: str
    sql: str
    params: list[Any]
    returned: Callable[[list[Any]], None] | None = None


class _Batch:
    """The writes kept back on one connection inside `writes_together`; an execute wrapper, so
    that any other statement the connection runs meanwhile goes after them."""

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection
        self.pieces: list[_Piece] = []

    def add(self, pieces: Sequence[_Piece]) -> None:
        # The parts of one statement all see the tables as they were before it, and two
        # changes of one row in one statement keep only one: a write to a table the batch
        # writes already waits for the batch to be sent.
        if {p.table for p in pieces} & {p.table for p in self.pieces}:
            self.send()
        self.pieces += pieces

    def send(self) -> None:
        pieces, self.pieces = self.pieces, []
        if pieces:
            _execute(self.connection, pieces)

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.send()
        return execute(sql, params, many, context)


@contextmanager
def writes_together(alias: str) -> Iterator[None]:
    """Inside a transaction on PostgreSQL, the row writes above (`rows_insert`, `rows_update`,
    `rows_replace`) are kept back and sent as one statement, a WITH of them all, when the block
    ends, or before any other statement the connection runs meanwhile (a read sees them). An
    INSERT's rows get their ids, and `then` its ids, when they are sent. If the block raises,
    nothing kept back is sent: the transaction the exception rolls back would drop it. Elsewhere
    (SQLite, autocommit) each write goes at once, as outside."""
    connection = connections[alias]
    if (
        connection.vendor != "postgresql"
        or connection.get_autocommit()
        or _batch_of(connection) is not None
    ):
        yield
        return
    batch = _Batch(connection)
    with connection.execute_wrapper(batch):
        yield
        batch.send()


def _batch_of(connection: BaseDatabaseWrapper) -> _Batch | None:
    """The batch open on this connection (one of its execute wrappers), if any."""
    return next((w for w in connection.execute_wrappers if isinstance(w, _Batch)), None)


def _write(connection: BaseDatabaseWrapper, pieces: Sequence[_Piece]) -> None:
    """These writes, kept back if a batch is open on the connection, else at once in one
    statement."""
    batch = _batch_of(connection)
    if batch is None:
        _execute(connection, pieces)
    else:
        batch.add(pieces)


def _execute(connection: BaseDatabaseWrapper, pieces: Sequence[_Piece]) -> None:
    if len(pieces) == 1:
        sql, params = pieces[0].sql, pieces[0].params
    else:  # PostgreSQL's: each write a part of the WITH, the ids returned tagged by part
        parts = ", ".join(f"w{i} AS ({p.sql})" for i, p in enumerate(pieces))
        ids = [f"SELECT {i}, * FROM w{i}" for i, p in enumerate(pieces) if p.returned]
        sql = f"WITH {parts} {' UNION ALL '.join(ids) or 'SELECT 1'}"
        params = [value for p in pieces for value in p.params]
    returning = any(p.returned for p in pieces)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall() if returning else []
    for i, piece in enumerate(pieces):
        if piece.returned is not None:
            if len(pieces) == 1:
                piece.returned([row[0] for row in rows])
            else:
                piece.returned([row[1] for row in rows if row[0] == i])
