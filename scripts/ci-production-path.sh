#!/usr/bin/env bash
# CI: a fresh clone taken to production-style runs, without the TypeScript toolchain.
#  1. lint the Dockerfile (dockerfile-utils) and the systemd unit (systemd-analyze verify);
#  2. clone the committed tree, `npm ci && npm run build`; the Dockerfile's build stage in a folder
#     holding only what that stage copies (`npm run build:image`);
#  3. the Dockerfile's runtime stage outside Docker: a directory holding what the image COPYs (the
#     build stage's output),
#     `npm ci --omit=dev`, then its CMD as PID 1 of a new PID namespace under an unprivileged user,
#     split into an API and a worker process as in compose.yaml; a tour delivers one notification to
#     `plaza listen`, which verifies its signature; SIGTERM to PID 1 must drain and exit 0;
#  4. the backup and restore of docs/operations.md: pg_dump, pg_restore into a new database;
#  5. the production install of the README in the clone: `npm prune --omit=dev`,
#     `npm run start:prod` on the restored database (the first run's user logs in, its webhook gets a
#     second notification verified with its original secret), the tour again, SIGTERM, and dist/
#     must be left untouched.
# Uses PostgreSQL at PLAZA_CI_DATABASE_URL (a database of its own, dropped at the end).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PG_URL="${PLAZA_CI_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
WORK="$(mktemp -d)"
chmod 0755 "$WORK"
DB_NAME="plaza_ci_prod_$$"
DB_URL="${PG_URL%/*}/$DB_NAME"
RESTORED_URL="${DB_URL}_restored"
PIDS=()
# As the README's tour makes one: a common or weak password is refused when it is set.
TOUR_PASSWORD="$(node -p "require('crypto').randomBytes(18).toString('base64url')")"

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for db in "$DB_NAME" "${DB_NAME}_restored"; do
    psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "production path: $*" >&2
  for log in "$WORK"/*.log; do [ -f "$log" ] && { echo "--- $log" >&2; tail -n 30 "$log" >&2; }; done
  exit 1
}

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

wait_for() { # <what> <seconds> <command…>: retries the command every 0.2 s
  local what="$1" seconds="$2"
  shift 2
  for _ in $(seq 1 $((seconds * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  fail "timed out waiting for $what"
}

serve_pid_under() { # <ancestor pid>: the `plaza serve` node process started under it
  local pid p
  for pid in $(pgrep -f '^node .*bin/plaza\.js serve'); do
    p="$pid"
    while [ "${p:-1}" -gt 1 ]; do
      [ "$p" = "$1" ] && { echo "$pid"; return 0; }
      p="$(ps -o ppid= -p "$p" | tr -d ' ')"
    done
  done
  return 1
}

json_field() { node -e 'let s="";process.stdin.on("data",(c)=>(s+=c)).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }

echo "== Dockerfile lint (dockerfile-utils) and systemd unit check (systemd-analyze verify)"
(cd "$ROOT" && npx --no-install dockerfile-utils lint Dockerfile)
if command -v systemd-analyze >/dev/null && [ -x /usr/bin/node ]; then
  systemd-analyze verify "$ROOT/deploy/plaza.service"
else
  echo "systemd-analyze or /usr/bin/node missing: unit not verified"
fi

echo "== fresh clone: npm ci && npm run build"
git clone --quiet "$ROOT" "$WORK/clone"
cd "$WORK/clone"
npm ci --no-audit --no-fund --loglevel=error
npm run build --silent

# The Dockerfile's build stage sees only the files it COPYs (a build that needed test/ broke there).
echo "== build stage outside Docker: only what the image's build stage copies, npm run build:image"
STAGE="$WORK/build-stage"
mkdir -p "$STAGE"
cp -r package.json package-lock.json tsconfig.json tsconfig.build.json src "$STAGE/"
ln -s "$WORK/clone/node_modules" "$STAGE/node_modules"
(cd "$STAGE" && npm run build:image --silent) || fail "the Dockerfile's build stage does not compile"

echo "== npx plaza in the project runs the project's own bin, never a registry package"
npx --offline plaza --help | grep -q 'Usage: plaza <command>' || fail "npx plaza did not run the local bin"

echo "== runtime stage outside Docker: what the image copies, npm ci --omit=dev"
IMAGE="$WORK/image"
mkdir -p "$IMAGE/dist"
cp package.json package-lock.json "$IMAGE/"
(cd "$IMAGE" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
cp -r bin migrations public "$IMAGE/"
cp -r "$STAGE/dist/src" "$IMAGE/dist/src"
[ ! -e "$IMAGE/node_modules/typescript" ] || fail "the runtime stage installed typescript"
psql -q "$PG_URL" -c "CREATE DATABASE $DB_NAME" >/dev/null

# The tour of the README against a running service: accounts, login, a webhook to `plaza listen`,
# an event, and the notification arriving with a verified signature.
tour() { # <plaza command…> (run in the current directory)
  local api="http://127.0.0.1:$PORT" code="w$RANDOM" listen_port token secret
  listen_port="$(free_port)"
  "$@" marketplaces add "m$code" --name "Marketplace $code" >/dev/null
  "$@" sellers add "${code#w}" --name "Seller $code" >/dev/null
  "$@" connections add --seller "${code#w}" --marketplace "m$code" >/dev/null
  echo "$TOUR_PASSWORD" | "$@" users add "u$code" --seller "${code#w}" >/dev/null
  token="$(curl -sf "$api/api/v2/auth/login" -H 'content-type: application/json' \
    -d "{\"username\":\"u$code\",\"password\":\"$TOUR_PASSWORD\"}" | json_field token)" || fail "login failed"
  secret="$(curl -sf "$api/v1/m$code/webhooks" -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d "{\"code\":\"orders\",\"name\":\"Orders\",\"topic\":\"order/status_change/APRO\",\"callback_url\":\"http://127.0.0.1:$listen_port/hooks\"}" \
    | json_field secret)" || fail "webhook creation failed"
  "$@" listen --port "$listen_port" --secret "$secret" >"$WORK/listen-$code.log" 2>&1 &
  PIDS+=($!)
  wait_for "plaza listen" 20 grep -q Listening "$WORK/listen-$code.log"
  curl -sf "$api/v1/m$code/events" -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d "{\"topic\":\"order/status_change\",\"seller_id\":${code#w},\"entity_id\":\"ORD-1\",\"order\":{\"reference_order\":\"ORD-1\",\"status\":\"APRO\"},\"state_from\":null,\"state_to\":\"APRO\",\"author\":\"ci\"}" \
    >/dev/null || fail "event intake failed"
  wait_for "the notification at plaza listen" 30 grep -q 'answered 200' "$WORK/listen-$code.log"
  grep -q 'signature: verified' "$WORK/listen-$code.log" || fail "the signature did not verify: $(cat "$WORK/listen-$code.log")"
  echo "delivered and verified: $(grep -m1 'webhook-id' "$WORK/listen-$code.log" | xargs)"
  FIRST_CODE="${FIRST_CODE:-$code}"
}

verified_count_is() { [ "$(grep -c 'signature: verified' "$1")" -eq "$2" ]; }

# Another event for the first tour's webhook, after the restore: its receiver must verify it with the
# secret it was given before the backup (the keys were restored with the database).
deliver_again() { # <code of the first tour>
  local api="http://127.0.0.1:$PORT" code="$1" token
  token="$(curl -sf "$api/api/v2/auth/login" -H 'content-type: application/json' \
    -d "{\"username\":\"u$code\",\"password\":\"$TOUR_PASSWORD\"}" | json_field token)" || fail "login of a restored user failed"
  curl -sf "$api/v1/m$code/events" -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d "{\"topic\":\"order/status_change\",\"seller_id\":${code#w},\"entity_id\":\"ORD-2\",\"order\":{\"reference_order\":\"ORD-2\",\"status\":\"APRO\"},\"state_from\":null,\"state_to\":\"APRO\",\"author\":\"ci\"}" \
    >/dev/null || fail "event intake on the restored database failed"
  wait_for "the second notification" 30 verified_count_is "$WORK/listen-$code.log" 2
  echo "restored: user logged in, webhook delivered with its original secret"
}

stop_and_expect_clean_exit() { # <pid to signal> <pid to wait for> <log>
  kill -TERM "$1"
  local status=0
  wait "$2" || status=$?
  [ "$status" -eq 0 ] || fail "exit status $status after SIGTERM ($3)"
  grep -q '"msg":"stopped"' "$3" || fail "no 'stopped' line after SIGTERM in $3"
}

echo "== image CMD as PID 1, unprivileged, API and worker as separate processes (compose.yaml)"
mkdir -p "$WORK/data" && chown 65534:65534 "$WORK/data" && chmod 0700 "$WORK/data"
PORT="$(free_port)"
# Each container has a network of its own; here API and worker share the host's, so each takes a free
# port for its operations listener (METRICS_PORT=0) instead of both wanting 9464.
IMAGE_USER=(setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATH" HOME=/tmp NODE_ENV=production NODE_OPTIONS=--max-old-space-size=2000
  DATA_DIR="$WORK/data" PORT="$PORT" METRICS_PORT=0 HOST=127.0.0.1 LOG_FORMAT=json DATABASE_URL="$DB_URL" WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32)
cd "$IMAGE"
unshare --pid --fork --mount-proc "${IMAGE_USER[@]}" node --enable-source-maps bin/plaza.js serve --role api >"$WORK/image-api.log" 2>&1 &
API_NS=$!
PIDS+=("$API_NS")
wait_for "the API's /healthz" 60 curl -sf "http://127.0.0.1:$PORT/healthz"
API_PID="$(serve_pid_under "$API_NS")" # PID 1 inside its namespace
# Not through a shell function: $! must be the node process itself.
"${IMAGE_USER[@]}" node --enable-source-maps bin/plaza.js serve --role worker >"$WORK/image-worker.log" 2>&1 &
WORKER_PID=$!
PIDS+=("$WORKER_PID")
wait_for "the worker" 30 grep -q '"plaza started"' "$WORK/image-worker.log"
# The command itself, not a shell function: the tour's `plaza listen` runs in the background, and
# through a function $! would be a subshell, whose kill at cleanup left that node process running.
tour "${IMAGE_USER[@]}" node bin/plaza.js
stop_and_expect_clean_exit "$API_PID" "$API_NS" "$WORK/image-api.log"
stop_and_expect_clean_exit "$WORKER_PID" "$WORKER_PID" "$WORK/image-worker.log"

echo "== backup and restore as docs/operations.md says: pg_dump, pg_restore into a new database, keys copied"
pg_dump --format=custom --file="$WORK/plaza.dump" "$DB_URL"
createdb --maintenance-db="$PG_URL" "${DB_NAME}_restored"
pg_restore --no-owner --exit-on-error --dbname="$RESTORED_URL" "$WORK/plaza.dump"
cp -a "$WORK/data" "$WORK/clone-data"

echo "== production install in the clone: npm prune --omit=dev, npm run start:prod (on the restored database)"
cd "$WORK/clone"
npm prune --omit=dev --no-audit --no-fund --loglevel=error
[ ! -e node_modules/typescript ] && [ ! -e node_modules/.bin/tsc ] || fail "typescript is still installed after the prune"
touch "$WORK/started"
PORT="$(free_port)"
PORT="$PORT" METRICS_PORT=0 HOST=127.0.0.1 LOG_FORMAT=json DATA_DIR="$WORK/clone-data" DATABASE_URL="$RESTORED_URL" WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32 \
  npm run start:prod --silent >"$WORK/start-prod.log" 2>&1 &
NPM_PID=$!
PIDS+=("$NPM_PID")
wait_for "start:prod's /healthz" 60 curl -sf "http://127.0.0.1:$PORT/healthz"
deliver_again "$FIRST_CODE"
tour env DATABASE_URL="$RESTORED_URL" DATA_DIR="$WORK/clone-data" LOG_LEVEL=warn node bin/plaza.js
# Signalled like a service manager does: the node process, not the npm wrapper.
stop_and_expect_clean_exit "$(serve_pid_under "$NPM_PID")" "$NPM_PID" "$WORK/start-prod.log"
changed="$(find dist -newer "$WORK/started" | head -n 5)"
[ -z "$changed" ] || fail "start:prod wrote into dist/: $changed"

echo "production path: OK"
