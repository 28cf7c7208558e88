#!/usr/bin/env bash
# plot.sh FILE.json... OUT.png -- bus bandwidth and latency against size, one line per file and
# collective, from `mgcomm bench --json` files (or compare.sh --keep's peer files), so that runs
# can be compared by eye. Out-of-place rows only.
# Needs gnuplot and jq: installs Debian's gnuplot-nox and jq when they are absent (as root).
set -eu

if [ $# -lt 2 ]; then
  echo "usage: bench/plot.sh FILE.json... OUT.png" >&2
  exit 2
fi
out=${*: -1}
files=("${@:1:$#-1}")
case "$out" in
*.png) ;;
*) echo "plot.sh: the last argument, '$out', must be the .png to write" >&2; exit 2 ;;
esac

missing=()
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "plot.sh: needs ${missing[*]}: install them (Debian: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "plot.sh: installing ${missing[*]}" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One data file per (file, collective): bytes, time in us, busbw in GB/s; and its title.
plots=()
i=0
for f in "${files[@]}"; do
  [ -r "$f" ] || { echo "plot.sh: cannot read $f" >&2; exit 1; }
  colls=$(jq -r '[.results[] | select(.inplace == false) | .collective] | unique | .[]' "$f")
  [ -n "$colls" ] || { echo "plot.sh: $f has no out-of-place results" >&2; exit 1; }
  what=$(jq -r '"\(.backend), \(.nranks) \(.ranks_are)"' "$f")
  for c in $colls; do
    jq -r --arg c "$c" '.results[] | select(.inplace == false and .collective == $c and .bytes > 0)
                        | "\(.bytes) \(.time_us) \(.busbw_gbs)"' "$f" | sort -n >"$tmp/$i.dat"
    title="$(basename "$f" .json) $c"
    plots+=("'$tmp/$i.dat' using 1:COLUMN with linespoints title '${title//\'/} ($what)'")
    i=$((i + 1))
  done
done

plot_cmd() { # COLUMN: 2 time, 3 busbw
  local s="" p
  for p in "${plots[@]}"; do s+="${s:+, }${p/COLUMN/$1}"; done
  echo "plot $s"
}

gnuplot <<EOF
set terminal pngcairo size 1400,560 noenhanced font ",10"
set output '$out'
set multiplot layout 1,2
set grid
set key top left
set logscale x 2
set format x "%.0b%B"
set xlabel "size (bytes)"
set ylabel "bus bandwidth (GB/s)"
set title "bus bandwidth"
$(plot_cmd 3)
set logscale y 10
set key top left
set ylabel "time (us)"
set title "latency"
$(plot_cmd 2)
unset multiplot
EOF
echo "plot.sh: wrote $out"
