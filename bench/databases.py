"""The benches' own databases on the shared PostgreSQL server."""

from __future__ import annotations


def recreate_database(server: str, database: str) -> None:
    """Drop `database` on the server at `server` (a URL without the database's name), whoever
    is connected to it, and create it again, empty."""
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {database}")
