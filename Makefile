# Two commands matter: `make run` and `make test`. Everything else is what they are made of.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# make test runs against the real services on localhost.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/mazesite
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
# Two checkouts may test at once on one machine: give each its own database and queue names.
TEST_QUEUE ?= mazesite-test
PYTEST_ARGS ?=
# make run PORT=8101
PORT ?= 8000

.PHONY: run test lint format install migrate worker clean serve events cluster

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	mkdir -p var
	$(BIN)/python manage.py migrate --noinput

# The site on http://127.0.0.1:$(PORT) on SQLite, with an embedded Redis (from PyPI, on a unix
# socket in var/), a Celery worker and a Celery beat, watched by mazesite/devstack.py: it
# restarts a worker or beat that dies and stops everything on Ctrl-C. Mails go to this console.
run: install
	$(BIN)/python -m mazesite.devstack --port $(PORT)

# Production serving (README "Operate"): the static files collected for the manifest storage,
# then gunicorn with gunicorn.conf.py. Needs the production environment (DEBUG=0, SECRET_KEY,
# DATABASE_URL, REDIS_URL, ALLOWED_HOSTS...).
serve: install
	$(BIN)/python manage.py collectstatic --noinput
	$(BIN)/gunicorn -c gunicorn.conf.py mazesite.wsgi

# The live races' Server-Sent Events (mazesite/events.py), beside `make serve` on each web node:
# the balancer sends /games/<id>/events here (README "Operate"). One process holds thousands of
# viewers; EVENTS_WORKERS processes for more cores.
EVENTS_BIND ?= 127.0.0.1
EVENTS_PORT ?= 8001
EVENTS_WORKERS ?= 1
events: install
	$(BIN)/uvicorn mazesite.events:app --host $(EVENTS_BIND) --port $(EVENTS_PORT) \
	    --workers $(EVENTS_WORKERS) --timeout-graceful-shutdown 2 --no-access-log --backlog 4096

# The whole cluster on this machine, with faults (bench/cluster.py): its own PostgreSQL
# primary and replica, Redis, two web nodes behind HAProxy, two workers, two beats.
cluster: install
	$(BIN)/python bench/cluster.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: install lint
	@test -x /usr/bin/chromium || { echo "Debian's chromium is missing: apt-get install chromium (.ci/run does it)"; exit 1; }
	@psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname='mazesite'" | grep -q 1 \
	    || createdb -h 127.0.0.1 -U postgres mazesite
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) CELERY_QUEUE=$(TEST_QUEUE) MAZESITE_TEST_STRICT=1 \
	    $(BIN)/pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .mypy_cache .ruff_cache .hypothesis
