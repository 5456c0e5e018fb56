#!/usr/bin/env bash
# Every `bench/results/...` file the docs name must exist: a claim that
# points at a raw file the repository does not hold fails CI (issue 18).
#
#   scripts/check-results.sh            # the default documents
#   scripts/check-results.sh FILE...    # these documents instead
#
# A name may use shell braces and globs as the docs write them
# (`2026-11-24-ab-004-c6b32c6.{txt,json}`, `...-goro-only-*`): each
# alternative must exist, and a glob must match at least one file. A
# trailing `.` or `,` (the end of a sentence) is not part of the name.
set -euo pipefail
cd "$(dirname "$0")/.."

docs=("$@")
if ((${#docs[@]} == 0)); then
    docs=(README.md BENCH_RESULTS.md RELIABILITY.md goro-bench/README.md)
fi

missing=0
checked=0
while IFS=: read -r doc name; do
    while [[ "$name" == *[.,] ]]; do name=${name%?}; done
    # Only these characters reach the expansion below (the grep guarantees
    # it), so the eval expands braces and nothing else.
    [[ "$name" =~ ^[A-Za-z0-9._/*{},-]+$ ]] || { echo "check-results: odd name '$name' in $doc" >&2; exit 2; }
    eval "alts=($name)" 2>/dev/null || alts=("$name")
    for alt in "${alts[@]}"; do
        checked=$((checked + 1))
        if [[ "$alt" == *'*'* ]]; then
            # shellcheck disable=SC2206
            matches=($alt)
            if [[ ! -e "${matches[0]}" ]]; then
                echo "MISSING $doc: $alt (from $name) matches no file"
                missing=$((missing + 1))
            fi
        elif [[ ! -e "$alt" ]]; then
            echo "MISSING $doc: $alt${alts[1]+ (from $name)}"
            missing=$((missing + 1))
        fi
    done
done < <(grep -oHE 'bench/results/[A-Za-z0-9._/*{},-]+' "${docs[@]}" | sort -u)

if ((missing > 0)); then
    echo "check-results: $missing of $checked named raw files are missing"
    exit 1
fi
echo "check-results: all $checked raw files named in ${docs[*]} exist"
