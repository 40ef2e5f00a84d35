#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds from every trace: each line of the
# project's traces (conformance/traces) and of the published ones
# (../shared/narad-spec/conformance, when present) for parse_validate, and
# one input per trace (its index, in build.rs's order, with no edits) for
# the structure-aware targets. The corpus is generated, never committed.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")"
shopt -s nullglob
traces=(../conformance/traces/*.jsonl)
spec=(../../shared/narad-spec/conformance/*.jsonl)
# build.rs sorts each directory; globs are sorted too, project first.
all=("${traces[@]}" "${spec[@]}")
mkdir -p corpus/parse_validate corpus/checker_sequence corpus/store_rows corpus/line_reader \
    corpus/snapshot_bytes
seeded=0
for f in "${all[@]}"; do
    base=$(basename "$f" .jsonl)
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        [ -z "$line" ] && continue
        printf '%s' "$line" > "corpus/parse_validate/$base-$n"
        seeded=$((seeded + 1))
    done < "$f"
done
i=0
for f in "${all[@]}"; do
    base=$(basename "$f" .jsonl)
    # u16 little-endian journal index; the remaining fields take defaults.
    lo=$(printf '%03o' $((i & 255)))
    hi=$(printf '%03o' $((i >> 8)))
    printf "\\$lo\\$hi" > "corpus/checker_sequence/$base"
    printf "\\$lo\\$hi\\004" > "corpus/store_rows/$base"
    printf "\\$lo\\$hi\\050" > "corpus/snapshot_bytes/$base"
    # Bound 63, reads of 7 bytes, a 16-byte buffer, then the trace's bytes.
    { printf '\077\007\020'; head -c 4096 "$f"; } > "corpus/line_reader/$base"
    i=$((i + 1))
done
echo "seeded ${#all[@]} traces, $seeded lines"
