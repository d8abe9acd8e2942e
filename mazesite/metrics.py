"""GET /metrics: Prometheus' text format, for the addresses in METRICS_ALLOWED_IPS or a scraper
that sends `Authorization: Bearer <METRICS_TOKEN>`; anyone else gets a 404 (the page is not
there for them). With neither setting, only 127.0.0.1 and ::1 may read it.

What it holds: django-prometheus' request, response, database and cache metrics (per process;
with several gunicorn workers set PROMETHEUS_MULTIPROC_DIR, see gunicorn.conf.py, and they are
added up over the workers), and the site's own, read when scraped, each from one indexed query
or one Redis command, so the same from every node:

- mazesite_moves_total: the moves ever played (the highest move id); rate() gives moves/s;
- mazesite_outbox_pending, mazesite_outbox_oldest_pending_seconds: mails waiting to go out;
- mazesite_deadline_sweep_lag_seconds: how long the oldest passed deadline has waited for the
  sweep (0 when none has passed);
- mazesite_queue_depth: tasks waiting in the Celery queue (Redis);
- mazesite_worker_heartbeat_age_seconds, mazesite_sweep_age_seconds: the health marks
  (games/web/health.py); -1 when there is none;
- mazesite_scrape_errors: parts that could not be read in this scrape (each is logged).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_safe
from django_prometheus import middleware as prometheus_middleware
from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    sent = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return True
    # The client's address as the rate limits see it (behind TRUSTED_PROXIES proxies, theirs).
    client_ip = import_string(settings.RATELIMIT_IP_META_KEY)
    try:
        client = ipaddress.ip_address(client_ip(request))
    except ValueError:
        return False
    return any(client in network for network in settings.METRICS_ALLOWED_NETWORKS)


def _queue_depth() -> float:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        # Kombu keeps one list per priority step: the queue's name, then name\x06\x16<step>.
        names = [queue] + [f"{queue}\x06\x16{step}" for step in range(1, 10)]
        with client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.llen(name)
            return float(sum(pipe.execute()))
    finally:
        client.close()


class SiteCollector(Collector):
    """The site's gauges, read at each scrape."""

    def collect(self) -> Iterator[Metric]:
        from django.db.models import Max, Min

        from games.clock import now
        from games.models import Move, Outbox, Seat
        from games.web import health

        errors = 0
        at = now()
        try:
            highest = Move.objects.aggregate(m=Max("id"))["m"] or 0
            moves = CounterMetricFamily("mazesite_moves", "Moves ever played (highest move id).")
            moves.add_metric([], float(highest))
            yield moves
            pending = Outbox.objects.filter(status=Outbox.Status.PENDING)
            figures = pending.aggregate(oldest=Min("created_at"))
            yield GaugeMetricFamily(
                "mazesite_outbox_pending", "Mails waiting to go out.", value=pending.count()
            )
            oldest = figures["oldest"]
            yield GaugeMetricFamily(
                "mazesite_outbox_oldest_pending_seconds",
                "Age of the oldest mail waiting to go out (0 when none).",
                value=(at - oldest).total_seconds() if oldest else 0.0,
            )
            first_due = Seat.objects.filter(deadline__isnull=False, deadline__lt=at).aggregate(
                d=Min("deadline")
            )["d"]
            yield GaugeMetricFamily(
                "mazesite_deadline_sweep_lag_seconds",
                "How long the oldest passed deadline has waited for the sweep.",
                value=(at - first_due).total_seconds() if first_due else 0.0,
            )
        except Exception:  # noqa: BLE001 - a scrape reports what it could read
            logger.exception("metrics: the database could not be read")
            errors += 1
        try:
            yield GaugeMetricFamily(
                "mazesite_queue_depth", "Tasks waiting in the Celery queue.", value=_queue_depth()
            )
        except Exception:  # noqa: BLE001
            logger.exception("metrics: the queue could not be read")
            errors += 1
        try:
            from django.core.cache import cache

            marks = cache.get_many([health.worker_key(), health.sweep_key()])
            for name, key, text in (
                ("worker_heartbeat", health.worker_key(), "a worker's last heartbeat"),
                ("sweep", health.sweep_key(), "the last sweep's end"),
            ):
                mark = marks.get(key)
                # A mark from a node whose clock is ahead of this one's is fresh, not negative.
                age = max(0.0, time.time() - float(mark)) if mark is not None else -1.0
                yield GaugeMetricFamily(
                    f"mazesite_{name}_age_seconds", f"Seconds since {text} (-1: none).", value=age
                )
        except Exception:  # noqa: BLE001
            logger.exception("metrics: the health marks could not be read")
            errors += 1
        yield GaugeMetricFamily(
            "mazesite_scrape_errors", "Parts of this scrape that failed.", value=errors
        )


_site_registry = CollectorRegistry(auto_describe=False)
_site_registry.register(SiteCollector())


def exposition() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        processes = generate_latest(registry)
    else:
        processes = generate_latest(REGISTRY)
    return processes + generate_latest(_site_registry)


class PrometheusAfterMiddleware(prometheus_middleware.PrometheusAfterMiddleware):
    """django-prometheus' own, each labelled series looked up once per process: the library
    asks for about ten on every request, each a check of its labels under a lock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._series: dict[tuple[Any, ...], Any] = {}

    def label_metric(self, metric: Any, request: Any, response: Any = None, **labels: Any) -> Any:
        if not labels:
            return metric
        key = (metric, *labels.items())
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metric.labels(**labels)
        return series


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        raise Http404("No such page.")
    response = HttpResponse(exposition(), content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response
