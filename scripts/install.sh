#!/bin/sh
# Installs warden from a release archive, checked against its SHA-256 before anything in it
# is unpacked or run:
#
#   curl -fsSL https://raw.githubusercontent.com/warden-review/warden/main/scripts/install.sh \
#     | sh -s -- --version 0.1.0 [--target x86_64-unknown-linux-musl] [--bin-dir ~/.local/bin]
#
# When the release has no archive for the version and target (HTTP 404: a fork, an untagged
# ref, a target not built), it builds warden with `cargo install --locked` instead: from
# --source DIR (a checkout, as the GitHub Action passes its own) or from the git tag
# vVERSION. A bad checksum, a cut-short download or any other failure installs nothing and
# exits non-zero.
#
# Options:
#   --version V      the release to install (required; a leading "v" is ignored)
#   --target T       the Rust target triple (default: this machine's, as released: Linux
#                    musl, macOS, Windows msvc)
#   --bin-dir DIR    where warden goes (default: $WARDEN_INSTALL_DIR, else ~/.local/bin)
#   --source DIR     the checkout `cargo install --path` builds from when there is no asset
#   --git-ref REF    the git ref the fallback builds (default: vVERSION)
#   --no-fallback    fail instead of building when there is no asset
#   --build          build with cargo install at once, downloading nothing (a branch or a
#                    commit that is not a release: its own code, not a release's binary)
# Environment:
#   WARDEN_INSTALL_BASE_URL  the releases' download URL, before /vVERSION/ASSET (default:
#                            https://github.com/warden-review/warden/releases/download)
#   WARDEN_INSTALL_GIT       the repository the fallback builds from (default: the GitHub one)
#   WARDEN_INSTALL_CARGO     the cargo the fallback runs (default: cargo)
set -eu

say() { printf 'warden install: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

version=""
target=""
bin_dir="${WARDEN_INSTALL_DIR:-${HOME:-}/.local/bin}"
source_dir=""
git_ref=""
fallback=yes
build=no
base_url="${WARDEN_INSTALL_BASE_URL:-https://github.com/warden-review/warden/releases/download}"
git_url="${WARDEN_INSTALL_GIT:-https://github.com/warden-review/warden}"
cargo_cmd="${WARDEN_INSTALL_CARGO:-cargo}"

# need_value FLAG ARGC NEXT: the flag has a value, and it is not the next flag.
need_value() {
  [ "$2" -ge 2 ] || die "$1 needs a value"
  case "$3" in -*) die "$1 needs a value (got the flag '$3')" ;; esac
}
while [ "$#" -gt 0 ]; do
  case "$1" in
    --version) need_value "$1" "$#" "${2:-}"; version=$2; shift 2 ;;
    --version=*) version=${1#*=}; shift ;;
    --target) need_value "$1" "$#" "${2:-}"; target=$2; shift 2 ;;
    --target=*) target=${1#*=}; shift ;;
    --bin-dir) need_value "$1" "$#" "${2:-}"; bin_dir=$2; shift 2 ;;
    --bin-dir=*) bin_dir=${1#*=}; shift ;;
    --source) need_value "$1" "$#" "${2:-}"; source_dir=$2; shift 2 ;;
    --source=*) source_dir=${1#*=}; shift ;;
    --git-ref) need_value "$1" "$#" "${2:-}"; git_ref=$2; shift 2 ;;
    --git-ref=*) git_ref=${1#*=}; shift ;;
    --no-fallback) fallback=no; shift ;;
    --build) build=yes; shift ;;
    -h | --help) sed -n '2,31p' "$0" 2>/dev/null || true; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
version=${version#v}
[ -n "$version" ] || die "--version is required, e.g. --version 0.1.0"
case "$version" in
  *[!A-Za-z0-9.+-]*) die "--version '$version' is not a version" ;;
esac
[ -n "$bin_dir" ] || die "no --bin-dir and no HOME to put ~/.local/bin in"

# This machine's target, named as the release names its archives.
detect_target() {
  os=$(uname -s)
  arch=$(uname -m)
  case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) die "no release build for the CPU '$arch': pass --target, or build with cargo install" ;;
  esac
  case "$os" in
    Linux) echo "$arch-unknown-linux-musl" ;;
    Darwin) echo "$arch-apple-darwin" ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT) echo "$arch-pc-windows-msvc" ;;
    *) die "no release build for the OS '$os': pass --target, or build with cargo install" ;;
  esac
}
[ -n "$target" ] || target=$(detect_target)
case "$target" in
  *[!A-Za-z0-9_.-]*) die "--target '$target' is not a target triple" ;;
esac

exe=warden
ext=tar.gz
case "$target" in *windows*) exe=warden.exe ext=zip ;; esac
name="warden-v$version-$target"
asset="$name.$ext"
url="${base_url%/}/v$version/$asset"

work=$(mktemp -d 2>/dev/null || mktemp -d -t warden-install)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# HTTPS only, redirects included, unless the base URL itself is plain HTTP (a local mirror).
protocols='=https'
case "$base_url" in http://*) protocols='=http,https' ;; esac

# fetch URL FILE: 0 fetched in full, 4 the server has no such file (404), 1 anything else
# (a refused connection, another status, a body cut short: curl and wget check the length).
fetch() {
  if command -v curl >/dev/null 2>&1; then
    code=$(curl -sSL --retry 2 --proto "$protocols" --proto-redir "$protocols" -o "$2" -w '%{http_code}' "$1") || {
      say "downloading $1 failed (curl exit $?, HTTP ${code:-none}): the download was refused or cut short"
      return 1
    }
    case "$code" in
      200) return 0 ;;
      404) return 4 ;;
      *) say "downloading $1 failed: HTTP $code"; return 1 ;;
    esac
  elif command -v wget >/dev/null 2>&1; then
    https_only=--https-only
    [ "$protocols" = '=https' ] || https_only=""
    # shellcheck disable=SC2086 # $https_only is one flag or none
    if wget -q $https_only -O "$2" "$1" 2>"$work/wget.err"; then return 0; fi
    if wget -S --spider "$1" 2>&1 | grep -q ' 404 '; then return 4; fi
    say "downloading $1 failed: the download was refused or cut short"
    return 1
  else
    die "neither curl nor wget is installed"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 "$1" | sed 's/^.*= *//'
  else
    die "no sha256sum, shasum or openssl to check the download with"
  fi
}

# Puts FILE at $bin_dir/$exe in one rename, so a reader never sees half a binary.
place() {
  mkdir -p "$bin_dir" || die "cannot create $bin_dir"
  cp "$1" "$bin_dir/.$exe.partial.$$" || die "cannot write to $bin_dir"
  chmod 755 "$bin_dir/.$exe.partial.$$"
  mv -f "$bin_dir/.$exe.partial.$$" "$bin_dir/$exe" || die "cannot write $bin_dir/$exe"
  say "installed $bin_dir/$exe"
}

build_instead() {
  [ "$fallback" = yes ] || die "no release asset $asset for $version (and --no-fallback)"
  [ "$build" = yes ] || say "no release asset $asset: building warden $version with cargo install --locked (minutes)"
  if [ -n "$source_dir" ]; then
    set -- install --locked --path "$source_dir"
  elif [ -n "$git_ref" ]; then
    set -- install --locked --git "$git_url" --rev "$git_ref"
  else
    set -- install --locked --git "$git_url" --tag "v$version"
  fi
  "$cargo_cmd" "$@" --root "$work/cargo-root" || die "cargo install failed: nothing installed"
  [ -f "$work/cargo-root/bin/$exe" ] || die "cargo install made no $exe: nothing installed"
  place "$work/cargo-root/bin/$exe"
}

if [ "$build" = yes ]; then
  [ "$fallback" = yes ] || die "--build and --no-fallback contradict each other"
  say "building warden from source (--build)"
  build_instead
  exit 0
fi
say "warden $version for $target from $url"
status=0
fetch "$url.sha256" "$work/sum" || status=$?
if [ "$status" -eq 4 ]; then
  build_instead
  exit 0
fi
[ "$status" -eq 0 ] || die "nothing installed"
status=0
fetch "$url" "$work/$asset" || status=$?
if [ "$status" -eq 4 ]; then
  build_instead
  exit 0
fi
[ "$status" -eq 0 ] || die "nothing installed"

# The checksum first: nothing from the archive is unpacked, let alone run, before it matches.
expected=$(awk 'NR == 1 { print tolower($1) }' "$work/sum")
case "$expected" in
  *[!0-9a-f]* | "") expected="" ;;
esac
[ "${#expected}" -eq 64 ] || die "$url.sha256 holds no SHA-256: nothing installed"
actual=$(sha256_of "$work/$asset")
if [ "$actual" != "$expected" ]; then
  die "checksum mismatch for $asset: expected $expected, got $actual (a damaged or altered download): nothing installed"
fi

mkdir "$work/x"
case "$ext" in
  zip)
    if command -v unzip >/dev/null 2>&1; then
      unzip -q "$work/$asset" -d "$work/x" || die "cannot unpack $asset: nothing installed"
    else
      tar -xf "$work/$asset" -C "$work/x" || die "cannot unpack $asset: nothing installed"
    fi
    ;;
  *) tar -xzf "$work/$asset" -C "$work/x" || die "cannot unpack $asset: nothing installed" ;;
esac
[ -f "$work/x/$name/$exe" ] || die "$asset holds no $name/$exe: nothing installed"
place "$work/x/$name/$exe"
