"""The move path's statements, built once per database connection instead of once per request:
the ORM builds a query's SQL anew each time it runs, which cost more than the move's database
round trips did. A `Compiled` read is a queryset compiled to SQL the first time a connection
runs it, then only executed, its rows turned into model instances as the queryset would have
(converters, select_related objects). `rows_insert`, `rows_update`, `rows_delete` and
`rows_replace` write rows in one short statement each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


def rows_insert(rows: Sequence[Model], *, ignore_conflicts: bool = False) -> list[Any]:
    """Insert these new rows of one model in one INSERT ... RETURNING: what `bulk_create`
    does, without its query building. Returns the ids of the rows inserted. Each row is given
    its id, unless `ignore_conflicts` (ON CONFLICT DO NOTHING: a row that would break a unique
    constraint is not inserted, and the ids returned are those of the rows that were). Fields
    with a database default only (no Python default) are not supported: every concrete field
    but the id is written."""
    if not rows:
        return []
    meta = rows[0]._meta
    model = type(rows[0])
    alias = router.db_for_write(model)
    connection = connections[alias]
    quote = connection.ops.quote_name
    assert meta.pk is not None
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
        f"{' ON CONFLICT DO NOTHING' if ignore_conflicts else ''}"
        f" RETURNING {quote(str(meta.pk.column))}"
    )
    params = [
        field.get_db_prep_save(getattr(row, field.attname), connection)
        for row in rows
        for field in columns
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ids = [found[0] for found in cursor.fetchall()]
    if not ignore_conflicts:
        for row, pk in zip(rows, ids, strict=True):
            row.pk = pk
            row._state.adding = False
            row._state.db = alias
    return ids


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
    with connection.cursor() as cursor:
        if len(rows) == 1 or connection.vendor != "postgresql":
            sets = ", ".join(f"{quote(str(field.column))} = %s" for field in columns)
            sql = f"UPDATE {table} SET {sets} WHERE {pk} = %s"
            if len(rows) == 1:
                cursor.execute(sql, values[0])
            else:
                cursor.executemany(sql, values)
            return
        # Each value cast to its column's type: a NULL in VALUES has none of its own.
        casts = [f"%s::{field.cast_db_type(connection)}" for field in columns]
        first = f"({', '.join([*casts, f'%s::{meta.pk.cast_db_type(connection)}'])})"
        more = f"({', '.join(['%s'] * (len(columns) + 1))})"
        names = [f"c{i}" for i in range(len(columns))]
        sets = ", ".join(
            f"{quote(str(field.column))} = v.{name}"
            for field, name in zip(columns, names, strict=True)
        )
        rows_sql = ", ".join([first] + [more] * (len(rows) - 1))
        sql = (
            f"UPDATE {table} SET {sets} FROM (VALUES {rows_sql})"
            f" AS v({', '.join(names)}, id) WHERE {table}.{pk} = v.id"
        )
        cursor.execute(sql, [p for row in values for p in row])


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
    quote = connection.ops.quote_name
    columns: list[Field[Any, Any]] = [
        f for f in meta.concrete_fields if not f.primary_key and isinstance(f, Field)
    ]
    for row in rows:
        for column in columns:
            column.pre_save(row, add=True)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    delete, params = _delete_sql(model, field, values, connection)
    sql = (
        f"WITH gone AS ({delete}) INSERT INTO {quote(meta.db_table)}"
        f" ({', '.join(quote(str(f.column)) for f in columns)})"
        f" VALUES {', '.join([one] * len(rows))} ON CONFLICT DO NOTHING"
    )
    params += [
        column.get_db_prep_save(getattr(row, column.attname), connection)
        for row in rows
        for column in columns
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _delete_sql(
    model: type[Model], field: str, values: Sequence[object], connection: BaseDatabaseWrapper
) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    column = model._meta.get_field(field)
    assert isinstance(column, Field)
    marks = ", ".join(["%s"] * len(values))
    table = quote(model._meta.db_table)
    return f"DELETE FROM {table} WHERE {quote(str(column.column))} IN ({marks})", list(values)
