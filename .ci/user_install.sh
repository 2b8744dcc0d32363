#!/usr/bin/env bash
# What a newcomer meets, on the install a newcomer has: README's first command, exactly as README gives it,
# run in a fresh clone (no extras: the tests' venv has extras a user's does not, and hides a dependency
# that only they bring), then every subcommand once from a folder outside the clone, on a space module
# written here. A non-zero exit or a traceback anywhere fails CI.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/tuner-user.XXXXXX)
trap 'rm -rf "$work"' EXIT

first_command=$(awk '/<!-- ci: first command -->/ {getline; getline; print; exit}' "$checkout/README.md")
if [ -z "$first_command" ]; then
  echo "ci: README has no line under '<!-- ci: first command -->'" >&2
  exit 1
fi
# A fresh clone where git is at hand; else a copy of the checkout without its test venv and results.
if command -v git >/dev/null 2>&1 && git -C "$checkout" rev-parse --git-dir >/dev/null 2>&1; then
  git clone --quiet "$checkout" "$work/tuner"
else
  mkdir "$work/tuner"
  tar -C "$checkout" --exclude=./.venv --exclude=./tuner_results -cf - . | tar -C "$work/tuner" -xf -
fi

failed=0
# Runs one step; its output is kept and shown whole when the step fails or prints a traceback.
step() {
  local name=$1
  shift
  local started=$SECONDS
  set +e
  "$@" >"$work/out" 2>&1
  local status=$?
  set -e
  if [ "$status" -ne 0 ] || grep -q "^Traceback" "$work/out"; then
    echo "ci: user install: FAILED: $name (exit $status, $((SECONDS - started)) s):" >&2
    sed 's/^/    /' "$work/out" >&2
    failed=1
    return 1
  fi
  echo "ci: user install: ok: $name ($((SECONDS - started)) s)"
}

# README's first command: the install and the default experiment, in the clone, as a user types it.
step "README's first command: $first_command" bash -c "cd '$work/tuner' && $first_command" || exit 1
tuner="$work/tuner/.venv/bin/tuner"
hint=$(grep '^html report:' "$work/out" | sed 's/^html report: *//')

mkdir "$work/elsewhere"
cd "$work/elsewhere"
cat >tiny.py <<'EOF'
from ray import tune

model = "mlp"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = 1
search = "random"
num_samples = 2
param_space = {"lr": tune.loguniform(1e-3, 1e-1), "hidden": tune.choice([16, 32])}
EOF
walked=(run list report resume extend ui down submit)
# In the shell the first command leaves, as README says: its virtualenv active.
step "the summary's html report line, pasted" bash -c "cd '$work/tuner' && source .venv/bin/activate && ${hint}" || true
step "run, keeping Ray" "$tuner" run tiny.py --name tiny --keep-ray 2m || true
step "list" "$tuner" list || true
step "report" "$tuner" report tuner_results/tiny || true
step "report --html" "$tuner" report tuner_results/tiny --html || true
step "resume of the finished run" "$tuner" resume tuner_results/tiny || true
step "extend" "$tuner" extend tuner_results/tiny --num-samples 1 || true
# The live page of the experiment, started as printed and asked for its study, then stopped.
step "ui, the page answers" "$work/tuner/.venv/bin/python" -c '
import socket, subprocess, sys, time, urllib.request
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
page = subprocess.Popen([sys.argv[1], "ui", "tuner_results/tiny", "--port", str(port)])
try:
    for _ in range(120):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=5).read()
        except OSError:
            time.sleep(0.5)
            continue
        assert b"\"study_name\": \"tiny\"" in body, body[:500]
        break
    else:
        sys.exit("the page never answered")
finally:
    page.terminate()
    page.wait(30)
' "$tuner" || true
step "down" "$tuner" down || true
step "submit --help" "$tuner" submit --help || true

# A subcommand added later is walked here too, or this fails.
commands=$("$tuner" --help | sed -n 's/^.*{\([a-z,]*\)}.*$/\1/p' | head -n 1 | tr ',' ' ')
for command in $commands; do
  if [[ " ${walked[*]} " != *" $command "* ]]; then
    echo "ci: user install: FAILED: \`tuner $command\` is not walked by .ci/user_install.sh" >&2
    failed=1
  fi
done
if [ -z "$commands" ]; then
  echo "ci: user install: FAILED: no subcommands read from \`tuner --help\`" >&2
  failed=1
fi
exit "$failed"
