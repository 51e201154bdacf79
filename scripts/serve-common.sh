# Sourced (not run) by the scripts that drive `hearth serve` (check-serve-clients.sh,
# check-gateway.sh, check-serve-scale-out.sh): the binary to run, the model check, and a
# private venv of PyPI packages. Run from the repository root.

# The hearth binary: $1 when given, else $HEARTH_BINARY when set (CI sets it to setup.sh's build:
# the checkout does not change during CI, and each `swift build` costs seconds of package loading,
# or a recompile of the `hearth` module when the build-info plugin's `git describe` changed), else
# a release build of this checkout.
hearth_binary() {
    if [ -n "$1" ]; then
        printf '%s\n' "$1"
        return
    fi
    if [ -n "${HEARTH_BINARY:-}" ]; then
        printf '%s\n' "$HEARTH_BINARY"
        return
    fi
    swift build -c release --product hearth >/dev/null
    printf '%s/hearth\n' "$(swift build -c release --show-bin-path)"
}

# Exits with the next step when the model file $1 is missing.
require_model() {
    [ -f "$1" ] || { echo "no model at $1: run scripts/setup.sh" >&2; exit 1; }
}

# A private venv at $1 with the PyPI packages that follow, installed once.
private_venv() {
    local venv="$1"
    shift
    if [ ! -f "$venv/.installed" ] || [ "$(cat "$venv/.installed")" != "$*" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet "$@"
        printf '%s' "$*" > "$venv/.installed"
    fi
}

# A venv at $1 holding every package of the pinned requirements file $2, installed once and
# again only when the file changes.
requirements_venv() {
    local dir="$1" file="$2" wanted
    wanted="$(sha256sum "$file" | cut -c1-64)"
    if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$wanted" ]; then
        python3 -m venv "$dir"
        "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$file"
        printf '%s' "$wanted" > "$dir/.installed"
    fi
}

# Headless Chromium and its driver (Debian's `chromium`, `chromium-driver`), installed when missing.
install_chromium() {
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
        local sudo=()
        [ "$(id -u)" = 0 ] || sudo=(sudo)
        echo "Installing chromium and chromium-driver…"
        "${sudo[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium chromium-driver >/dev/null
    fi
}

# The one venv of the check scripts, `$venv` (.build/checks-venv): scripts/requirements-checks.txt.
checks_venv() {
    venv=".build/checks-venv"
    requirements_venv "$venv" scripts/requirements-checks.txt
}

# The venv of the structured-output front ends, `$frontends_venv` (.build/frontends-venv):
# scripts/requirements-frontends.txt (instructor pins an older openai than the other checks).
frontends_venv() {
    frontends_venv=".build/frontends-venv"
    requirements_venv "$frontends_venv" scripts/requirements-frontends.txt
}

# A scratch folder `$work`, removed when the script exits, and `$server_pid` (set it when the
# server starts), killed then.
server_scratch() {
    work="$(mktemp -d)"
    server_pid=""
    trap server_cleanup EXIT
}
server_cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}

# Waits for `hearth serve` (pid $1, stdout in $2, stderr in $3) to print its URL and prints it
# (`http://127.0.0.1:PORT/v1`); fails with the server's log if it exits or 60 s pass.
server_url() {
    local pid="$1" out="$2" log="$3" found=""
    for _ in $(seq 1 600); do
        found="$(grep -o 'http://[^ ]*/v1' "$out" | head -1 || true)"
        if [ -n "$found" ]; then echo "$found"; return 0; fi
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "the server exited" >&2; return 1; }
        sleep 0.1
    done
    echo "the server did not become ready" >&2
    return 1
}

# The hub-fake binary: $1 when given, else the debug build's (brought up to date: a no-op after
# the suite's build).
hub_fake_binary() {
    if [ -n "$1" ]; then
        printf '%s\n' "$1"
        return
    fi
    # The debug build's: the suite's build (`swift build --build-tests`) already made it, where a
    # release one cost CI ~40 s of compiling the fake and NIO's test-only parts (issue 60's budget).
    swift build --product hub-fake >/dev/null
    printf '%s/hub-fake\n' "$(swift build --show-bin-path)"
}

# Starts the fake hub (`hub-fake BINARY WORK --repo ORG/NAME=DIR …`), logging into WORK; sets
# fake_pid and endpoint (its URL) once it listens, or exits.
start_hub_fake() {
    local fake="$1" dir="$2"
    shift 2
    "$fake" "$@" > "$dir/fake.log" 2> "$dir/fake.err" &
    fake_pid=$!
    endpoint=""
    for _ in $(seq 1 300); do
        endpoint="$(head -1 "$dir/fake.log" 2>/dev/null | grep -o 'http://[^ ]*' || true)"
        [ -n "$endpoint" ] && return 0
        kill -0 "$fake_pid" 2>/dev/null || { cat "$dir/fake.err" >&2; echo "hub-fake exited" >&2; exit 1; }
        sleep 0.1
    done
    echo "hub-fake did not start" >&2
    exit 1
}
