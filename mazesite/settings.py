"""Settings, read from the environment. Every default is for a developer's machine."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from pathlib import Path
from typing import Any

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from mazesite import logs

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("MAZESITE_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfigured(f"Set the environment variable {name}.")
    return value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {value!r}.")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}.") from None


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str(
    "SECRET_KEY", "dev-only-insecure-key-do-not-use-in-production" if DEBUG else None
)
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "django_prometheus",
    "games",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "games.web.middleware.InputGuardMiddleware",  # NUL and over-long input: 400 before any query
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "mazesite.logs.RequestLogMiddleware",  # request id, user and game on every log line
    "mazesite.dbrouter.ReplicaMiddleware",  # which database this request reads from
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "games.web.middleware.FormPageMiddleware",  # a GET of a form's post address: its page
]

ROOT_URLCONF = "mazesite.urls"
WSGI_APPLICATION = "mazesite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "games.pages.context_processors.your_move",  # "Your move: N", the title's (N)
                "games.pages.context_processors.sign_in_next",  # back from "Sign in"
            ],
            "builtins": ["games.ui.tags"],  # mark, when, clock_in_words
        },
    },
]

# Connections (README "Performance"): persistent (CONN_MAX_AGE seconds, checked before each
# request's first query) or psycopg's pool (DB_POOL=1, PostgreSQL only; CONN_MAX_AGE must be 0).
DB_POOL = env_bool("DB_POOL", False)
DB_POOL_MIN_SIZE = env_int("DB_POOL_MIN_SIZE", 2)
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 8)


def database(url: str) -> dict[str, Any]:
    config: dict[str, Any] = dict(
        dj_database_url.parse(
            url,
            conn_max_age=env_int("CONN_MAX_AGE", 0),
            conn_health_checks=env_bool("CONN_HEALTH_CHECKS", True),
        )
    )
    if config["ENGINE"] == "django.db.backends.postgresql":
        options: dict[str, Any] = config.setdefault("OPTIONS", {})
        # Parameters bound by the server, and a query run five times on a connection prepared:
        # the archive's queries plan in longer than they run. Needs long-lived connections.
        options.update(server_side_binding=True, prepare_threshold=5)
        if DB_POOL:
            if config["CONN_MAX_AGE"]:
                raise ImproperlyConfigured("DB_POOL=1 needs CONN_MAX_AGE=0 (the pool keeps them).")
            options["pool"] = {
                "min_size": DB_POOL_MIN_SIZE,
                "max_size": DB_POOL_MAX_SIZE,
                "timeout": env_int("DB_POOL_TIMEOUT", 10),
            }
    elif DB_POOL:
        raise ImproperlyConfigured("DB_POOL=1 needs PostgreSQL.")
    return config


DATABASES = {"default": database(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"))}
# A streaming replica (optional): the archive, player pages, feeds and replays read from it
# (mazesite/dbrouter.py); without REPLICA_DATABASE_URL everything goes to the default.
REPLICA_DATABASE_URL = os.environ.get("REPLICA_DATABASE_URL", "")
if REPLICA_DATABASE_URL:
    DATABASES["replica"] = database(REPLICA_DATABASE_URL)
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
READ_REPLICA = bool(REPLICA_DATABASE_URL)
DATABASE_ROUTERS = ["mazesite.dbrouter.ReplicaRouter"]
# After a client writes (any POST), its reads stay on the primary this long (a cookie).
REPLICA_STICKY_SECONDS = env_int("REPLICA_STICKY_SECONDS", 10)
# A replica that failed is left alone this long before it is tried again.
REPLICA_RETRY_SECONDS = env_int("REPLICA_RETRY_SECONDS", 5)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the worker's threads and the beat share the file. WAL lets readers go on
    # while one writer writes; IMMEDIATE takes the write lock when a transaction begins, so a
    # second writer waits for it (up to `timeout` seconds) instead of failing with "database is
    # locked" when a transaction that began by reading wants to write.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=20,
        transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    )
    # An index's INCLUDE columns (PostgreSQL's index-only scans) are left out on SQLite.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The user with its profile in one query (games/accounts/backends.py); Django's own backend
# still reads the sessions signed in before it.
AUTHENTICATION_BACKENDS = [
    "games.accounts.backends.ProfileBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "lobby"
LOGOUT_REDIRECT_URL = "lobby"
# How often the lobby's "your games" refreshes itself (htmx's hx-trigger "every ..."), seconds.
LOBBY_POLL_EVERY = f"{env_int('LOBBY_POLL_SECONDS', 20)}s"
# How often a game page's chat asks for new messages (a 204 while there is none).
CHAT_POLL_EVERY = f"{env_int('CHAT_POLL_SECONDS', 5)}s"
# A player's page of a finished game waits this long after the end for the other players'
# rematch offer, asking every REMATCH_POLL_EVERY (the game's version moves when one is made).
REMATCH_WAIT_SECONDS = env_int("REMATCH_WAIT_SECONDS", 3600)
REMATCH_POLL_EVERY = f"{env_int('REMATCH_POLL_SECONDS', 10)}s"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Hashed names (the manifest) are cached for a year, immutable; any other file a day.
WHITENOISE_MAX_AGE = env_int("WHITENOISE_MAX_AGE", 24 * 3600)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Email: the console by default, SMTP when EMAIL_HOST is set.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "mazesite <noreply@mazesite.localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# Redis: the Celery broker, the cache and the health marks. Production sets REDIS_URL
# (`redis://host:6379/0`, or `unix:///path/to/redis.sock`); `make run` starts an embedded Redis
# server on a unix socket in var/ (mazesite/devstack.py), which is the default here.
REDIS_URL = env_str("REDIS_URL", f"unix://{VAR_DIR / 'redis.sock'}")
if not REDIS_URL:
    raise ImproperlyConfigured("REDIS_URL must not be empty: the site needs Redis.")


def celery_broker_url(redis_url: str) -> str:
    """Kombu names a unix socket `redis+socket:///path`; redis-py (the cache) `unix:///path`."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


CELERY_BROKER_URL = celery_broker_url(REDIS_URL)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 60)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 90)
# Parallel test workers each get their own queue, as they each get their own database.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "mazesite") + os.environ.get(
    "PYTEST_XDIST_WORKER", ""
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# Clocks: the beat sweeps expired deadlines, due reminders, lost bot turns and stuck mails every
# SWEEP_INTERVAL_SECONDS; the database holds every deadline, so a lost sweep loses nothing.
SWEEP_INTERVAL_SECONDS = env_int("SWEEP_INTERVAL_SECONDS", 15)
# How long a write waits for a game's lock (games/play/core.py, game_locked) before the player
# is told the game is busy and to try again; on PostgreSQL (SET LOCAL lock_timeout).
GAME_LOCK_TIMEOUT_MS = env_int("GAME_LOCK_TIMEOUT_MS", 2000)
DIGEST_HOUR_UTC = env_int("DIGEST_HOUR_UTC", 7)
CELERY_BEAT_SCHEDULE = {
    "sweep-deadlines": {
        "task": "games.tasks.sweep_deadlines",
        "schedule": float(SWEEP_INTERVAL_SECONDS),
        # Sweeps that piled up while no worker ran are dropped: the next one does their work.
        "options": {"expires": SWEEP_INTERVAL_SECONDS},
    },
    "digest-daily": {
        "task": "games.tasks.digest_send",
        "schedule": crontab(hour=DIGEST_HOUR_UTC, minute=0),
    },
}
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20)

# Cache: Redis (the web server and the worker share it: the worker asks whether a player has the
# game open; the health marks live there too). A Redis that stops answering is an error within
# seconds, so a page or a worker's heartbeat never hangs on it.
CACHES = {
    "default": {
        # Django's Redis cache, one client per pool kept (mazesite/cache.py).
        "BACKEND": "mazesite.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CELERY_TASK_DEFAULT_QUEUE,  # one site (or test worker), one prefix
        "OPTIONS": {"socket_timeout": 2, "socket_connect_timeout": 2},
    }
}
# Sessions read from the cache, kept in the database (games/accounts/sessions.py: a session
# read costs no query; while Redis does not answer, the database alone). A session stays in the
# cache at most this long, so that a copy the cache missed a change to goes away soon.
SESSION_ENGINE = "games.accounts.sessions"
SESSION_CACHE_SECONDS = env_int("SESSION_CACHE_SECONDS", 300)
# The signed-in user with its profile, kept as long under this prefix (games/accounts/
# backends.py); the tests give each test its own.
USER_CACHE_PREFIX = "user:1:"
# How long a changed user is read from the database alone: longer than any request takes from
# its read of the user to keeping it.
USER_CACHE_MARK_SECONDS = 5


def drawing_version(base: Path, folders: tuple[str, ...] = ("games", "templates")) -> str:
    """A hash of the code and templates under `folders` (their .py and .html files, names and
    contents): what draws the pages, partials and logs kept in the cache. In their keys, so that
    a deploy that changes how a page is drawn never serves one drawn by the code before it (the
    static files' own hash only covers the addresses a page names)."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((base / folder).rglob("*")):
            if path.suffix in {".py", ".html"} and path.is_file():
                digest.update(str(path.relative_to(base)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


# The game page's drawn move logs, partials and page shells are kept in the cache under this
# prefix (games/pages/contexts.py, game_cache.py), new with each change to what draws them; the
# tests give each test its own.
GAME_LOG_CACHE_PREFIX = f"game-log:{drawing_version(BASE_DIR)}:"

# Health (/healthz, games/health.py): 200 only while the database and the broker answer and a
# worker's heartbeat and the last sweep are at most HEALTH_FRESH_SECONDS old. Each worker
# writes its heartbeat every WORKER_HEARTBEAT_SECONDS.
HEALTH_FRESH_SECONDS = env_int("HEALTH_FRESH_SECONDS", 60)
# Where the health marks are kept in the cache (games/web/health.py): the web nodes and every
# worker of one site share them; a test run gives each test its own.
HEALTH_CACHE_PREFIX = env_str("HEALTH_CACHE_PREFIX", "health:")
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 10)

if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True

# --- Proxies, limits on abuse, security headers (games/limits.py) ---------------------------
# How many proxies of ours stand in front of the site. 0: clients connect to us directly, and
# REMOTE_ADDR is theirs. N: the Nth address from the right of X-Forwarded-For is the client's
# (a client can write anything further left), and the proxy says whether the request came by
# HTTPS. Without a proxy, no header a client sends is believed.
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0)
if TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured("TRUSTED_PROXIES must be 0 or more.")
if TRUSTED_PROXIES:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


def env_rates(name: str, defaults: dict[str, str]) -> dict[str, str]:
    """`defaults` with the overrides in `name`, written as `limit=rate,limit=rate`."""
    rates = dict(defaults)
    for item in filter(None, (i.strip() for i in os.environ.get(name, "").split(","))):
        limit, _, rate = (part.strip() for part in item.partition("="))
        if limit not in rates or not re.fullmatch(r"[1-9]\d*/\d*[smhd]", rate):
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not limit=count/period with a known limit "
                f"({', '.join(rates)}) and a period such as s, 5s, 15m, h or d."
            )
        rates[limit] = rate
    return rates


# Counts per window (django-ratelimit's "count/period": 30/10m is 30 in ten minutes). A live
# race lands a step every 250 ms at most, 20 in 5 s: move_seat leaves room for a held key.
RATE_LIMITS = env_rates(
    "RATE_LIMITS",
    {
        "guest_client": "30/10m",
        "signup_client": "10/h",
        "login_failed_account": "10/15m",
        "login_failed_client": "30/15m",
        "verify_mail_address": "5/h",
        "verify_mail_client": "20/h",
        "reset_mail_address": "3/h",
        "reset_mail_client": "10/h",
        "join_player": "60/h",
        "create_player": "30/h",
        "move_seat": "40/5s",
        # The calendar feed (games/accounts/calendar.py): programs fetch it about hourly.
        "calendar_client": "120/h",
        "calendar_feed": "60/h",
        "calendar_link_player": "20/h",
        "chat_player": "10/m",
        "chat_action_player": "30/h",
        # Checking a record someone has (games/archive/views.py): a long race's replay takes
        # a second of the server's time.
        "record_verify_client": "30/h",
    },
)

# A record sent to be checked (/records/verify/): a 10-minute live race of 4 runners, the
# longest a record gets, is about 2.4 MB of the download's JSON. The request may carry that
# much besides its form fields (Django refuses more with a 400), and a file of that size is
# read in memory, never written to a temporary file.
RECORD_MAX_BYTES = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = RECORD_MAX_BYTES + 64 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

RATELIMIT_IP_META_KEY = "games.web.limits.client_ip"
RATELIMIT_CACHE_PREFIX = "rl:"
RATELIMIT_FAIL_OPEN = True  # a count the cache lost lets the request through

# No inline script, no eval, no inline style: every script and style is a file under static/.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# Live races by Server-Sent Events (mazesite/events.py, README "Operate"): the stream's origin
# when it is not this site's own (make run: http://127.0.0.1:PORT+1); empty, the page asks its
# own origin for /games/<id>/events (a balancer routes it to the events server). Without an
# events server the page polls, as it does without JavaScript.
RACE_EVENTS_ORIGIN = env_str("RACE_EVENTS_ORIGIN", "").rstrip("/")
RACE_EVENTS = env_bool("RACE_EVENTS", True)  # 0: no stream offered, the pages only poll
SSE_HEARTBEAT_SECONDS = env_int("SSE_HEARTBEAT_SECONDS", 15)
SSE_MAX_CONNECTIONS = env_int("SSE_MAX_CONNECTIONS", 5000)  # per events process; then 503
SSE_RETRY_MS = env_int("SSE_RETRY_MS", 2000)  # how soon a browser reconnects
if RACE_EVENTS_ORIGIN:
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["connect-src"] = ["'self'", RACE_EVENTS_ORIGIN]
MIDDLEWARE += ["games.web.middleware.PolicyMiddleware", "games.web.limits.LimitMiddleware"]

MIDDLEWARE += ["mazesite.metrics.PrometheusAfterMiddleware"]

# --- Observability (README "Operate") ----------------------------------------------------------
# Logs: JSON lines with the request id, user and game (mazesite/logs.py); LOG_FORMAT=console
# for people reading them.
LOG_FORMAT = env_str("LOG_FORMAT", "console" if DEBUG else "json")
if LOG_FORMAT not in {"json", "console"}:
    raise ImproperlyConfigured("LOG_FORMAT must be json or console.")
LOGGING = logs.logging_config(LOG_FORMAT, env_str("LOG_LEVEL", "INFO"))
logs.configure()

# /metrics (mazesite/metrics.py): from these networks, or with `Authorization: Bearer
# METRICS_TOKEN`; anyone else gets a 404.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
try:
    METRICS_ALLOWED_NETWORKS = [
        ipaddress.ip_network(n.strip())
        for n in env_str("METRICS_ALLOWED_IPS", "127.0.0.1/32,::1/128").split(",")
        if n.strip()
    ]
except ValueError as exc:
    raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS: {exc}") from None
PROMETHEUS_EXPORT_MIGRATIONS = False

# The bare view that benches measure the site against (bench/load.py): one indexed query, at
# /bench/yardstick, and the least a move POST can be, at /bench/least-move (mazesite/benchviews.py).
# Only with BENCH_YARDSTICK=1, never by default.
BENCH_YARDSTICK = env_bool("BENCH_YARDSTICK", False)

# One beat schedules, however many are started (mazesite/beat.py).
CELERY_BEAT_SCHEDULER = "mazesite.beat:LockedScheduler"
