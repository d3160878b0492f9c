# finesettle: one image for every replica and for the one-shot commands (migrate, seed, settle).
#
#   scripts/build-image                   # the tags of .env as build arguments; or docker compose build
#   docker run --rm -p 8080:8080 -e DATABASE_URL=postgres://... finesettle:local          # serve
#   docker run --rm -e DATABASE_URL=postgres://... finesettle:local backfill --from .. --to ..
#
# Two stages: a Rust toolchain that builds the release binary, and a small Debian runtime that
# only runs it, as an unprivileged user.

# The base images are named once, in .env (compose passes them in); `scripts/local-images` builds
# them where no registry is reachable.
ARG RUST_IMAGE
ARG DEBIAN_IMAGE

# ---- build ----------------------------------------------------------------------------------
FROM ${RUST_IMAGE} AS build
WORKDIR /src

# SQL is checked at compile time against the committed query data in .sqlx/, not against a
# live database: the build needs no PostgreSQL (`scripts/sqlx-prepare` refreshes it).
ENV SQLX_OFFLINE=true \
    CARGO_TERM_COLOR=never \
    CARGO_INCREMENTAL=0

# 1. Dependencies only, in their own layer: rebuilt when Cargo.toml or Cargo.lock change, not on
#    every source edit. Placeholder targets stand in for the crate's own code (the examples
#    declared under load/ are not built by `cargo build`, so they need no placeholder).
#    The workspace's other member, the protocol model (model/), is never built here; only its
#    manifest and an empty library are needed for cargo to load the workspace.
COPY Cargo.toml Cargo.lock ./
COPY model/Cargo.toml ./model/
RUN mkdir src model/src \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs model/src/lib.rs \
    && cargo fetch --locked \
    && cargo build --release --locked --bin finesettle \
    && rm -rf src

# 2. The crate itself. The placeholders' build records are removed so cargo cannot mistake them
#    for the real sources (COPY keeps the files' modification times, which may be older).
COPY .sqlx ./.sqlx
COPY migrations ./migrations
COPY src ./src
RUN rm -rf target/release/.fingerprint/finesettle-* target/release/deps/finesettle-* \
           target/release/deps/libfinesettle-* \
    && cargo build --release --locked --bin finesettle \
    && install -D -m 0755 target/release/finesettle /out/finesettle

# ---- runtime --------------------------------------------------------------------------------
FROM ${DEBIAN_IMAGE} AS runtime

# ca-certificates: TLS to a managed PostgreSQL, Redis or OTLP endpoint (rustls reads the system
# roots). curl: the health check below. tzdata is not needed: chrono-tz embeds the zone rules.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 finesettle \
    && useradd --system --uid 10001 --gid finesettle --no-create-home --home-dir /nonexistent \
               --shell /usr/sbin/nologin finesettle

COPY --from=build /out/finesettle /usr/local/bin/finesettle

# The process writes nothing to disk: logs go to stdout as JSON, state lives in PostgreSQL.
USER 10001:10001
ENV FINESETTLE_HTTP_ADDR=0.0.0.0:8080 \
    RUST_LOG=info
EXPOSE 8080

# Ready means the database (and Redis, when configured) answers: an orchestrator routes traffic
# only then. The port follows FINESETTLE_HTTP_ADDR when a deployment changes it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD curl -fsS -o /dev/null "http://127.0.0.1:${FINESETTLE_HTTP_ADDR##*:}/readyz" || exit 1

# SIGTERM (docker stop) lets a running settlement finish its current date, releases the lock and
# exits 0 within FINESETTLE_SHUTDOWN_GRACE (30s by default): give `docker stop` a longer timeout.
STOPSIGNAL SIGTERM
ENTRYPOINT ["finesettle"]
CMD ["serve"]
