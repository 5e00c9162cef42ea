# One image for the console's web, worker and beat services (docker-compose.yml).
FROM python:3.13-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    STATIC_ROOT=/app/staticfiles

# bubblewrap sandboxes command hooks; jq is what the seed's bash Stop hook calls.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap jq \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY . .
# Static files are collected at build time under production settings, so WhiteNoise serves
# the compressed copies; the throwaway key never reaches a running container.
RUN pip install -e . \
    && DEBUG=0 SECRET_KEY=collectstatic-only-not-a-secret ALLOWED_HOSTS=localhost \
       python manage.py collectstatic --noinput \
    && useradd --system --uid 10001 --home-dir /app console \
    && mkdir -p /app/var \
    && chown console /app/var

USER console
EXPOSE 8000
CMD ["sh", "-c", "python manage.py migrate --noinput && exec daphne -b 0.0.0.0 -p 8000 console.asgi:application"]
