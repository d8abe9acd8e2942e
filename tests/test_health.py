"""/healthz against a real Celery worker and beat (tests/worker_fixtures.py), the Redis on
localhost and this test's database: 200 only while the database and the broker answer and the
worker's heartbeat and the last sweep are fresh; 503 naming what fails. HEAD answers as GET."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tests.worker_fixtures import WorkerProcess, wait_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Nothing listens on port 1: connecting is refused at once.
NO_BROKER = "redis://127.0.0.1:1/0"


def health(client: Client) -> tuple[int, dict[str, Any]]:
    response = client.get("/healthz")
    assert response["Content-Type"] == "application/json"
    return response.status_code, json.loads(response.content)


def head_matches_get(client: Client, status: int) -> None:
    head = client.head("/healthz")
    assert head.status_code == status
    assert head["Content-Type"] == "application/json"
    assert head.content == b""


def test_healthz_is_200_while_the_worker_runs_and_503_naming_the_broker_when_it_is_down(
    celery_worker_process: WorkerProcess,
    client: Client,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.HEALTH_FRESH_SECONDS = 5
    wait_until(
        lambda: health(client)[0] == 200,
        timeout=60,
        what=f"/healthz to say 200: {health(client)}\n{celery_worker_process.output()[-2000:]}",
    )
    assert health(client) == (200, {"ok": True, "failing": [], "problems": []})
    head_matches_get(client, 200)

    # The broker stops answering (Celery reads CELERY_BROKER_WRITE_URL at each connection).
    monkeypatch.setenv("CELERY_BROKER_WRITE_URL", NO_BROKER)
    status, body = health(client)
    assert status == 503
    assert body["ok"] is False
    assert body["failing"] == ["broker"], body
    (problem,) = body["problems"]
    assert problem.startswith("broker: the broker does not answer")
    head_matches_get(client, 503)

    monkeypatch.delenv("CELERY_BROKER_WRITE_URL")
    assert health(client)[0] == 200


def test_healthz_says_503_naming_the_worker_once_the_worker_stops(
    celery_worker_process: WorkerProcess, client: Client, settings: Any
) -> None:
    settings.HEALTH_FRESH_SECONDS = 5
    wait_until(lambda: health(client)[0] == 200, timeout=60, what="/healthz to say 200")

    celery_worker_process.process.terminate()
    celery_worker_process.process.wait(timeout=30)
    # Its heartbeat grows old (and so does the last sweep: the beat ran in the same process).
    wait_until(
        lambda: "worker" in health(client)[1]["failing"],
        timeout=30,
        what=f"/healthz to name the worker: {health(client)}",
    )
    status, body = health(client)
    assert status == 503
    assert "database" not in body["failing"] and "broker" not in body["failing"]
    assert any(
        p.startswith("worker: a worker's last heartbeat was ") and "more than 5 s" in p
        for p in body["problems"]
    ), body
    head_matches_get(client, 503)
