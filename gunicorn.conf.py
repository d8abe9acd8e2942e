"""gunicorn's configuration: `gunicorn -c gunicorn.conf.py mazesite.wsgi` (make serve).

Every value can be set from the environment. The defaults are what bench/load.py measured best
on a 2-core machine (README "Performance"): one gthread worker per core, 4 threads each. A
worker holds about 90 MB; threads overlap the database's and Redis' round trips, the workers
the CPU.
"""

from __future__ import annotations

import os
from typing import Any

bind = os.environ.get("BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("WEB_CONCURRENCY", os.cpu_count() or 1))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# Connections a gthread worker keeps open between requests (keep-alive from the balancer).
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", "1000"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "20"))
# A worker is replaced after this many requests (0: never), with some jitter so that they do
# not all restart at once.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))
max_requests_jitter = max_requests // 10
# The app's own `request` log line (mazesite/logs.py) says what an access log would.
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
proc_name = os.environ.get("GUNICORN_PROC_NAME", "mazesite")
# Behind a balancer on this host only; more with FORWARDED_ALLOW_IPS.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")


def on_starting(server: Any) -> None:
    """With PROMETHEUS_MULTIPROC_DIR, the workers add up their metrics in files there: emptied
    at each start, as prometheus_client asks."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory, exist_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    """With PROMETHEUS_MULTIPROC_DIR, a dead worker's live gauges go with it."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
