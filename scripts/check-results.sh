#!/usr/bin/env bash
# Every `bench/results/...` file the docs name must exist: a claim that
# points at a raw file the repository does not hold fails CI. Then the
# counts the README states from a raw file (the test count and time of
# `cargo test --workspace`, `compare`'s row counts) must be the raw
# file's numbers.
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

# Counts a document states that a raw file holds: the number the document
# gives must be the raw file's. Each check names the document, a Perl regex
# whose \K...(?=...) match is the number in the document (line breaks read
# as spaces, as the docs wrap them), the raw file and the same for it. Run
# only with the default documents.
((${#docs[@]} == 4 && $# == 0)) || exit 0
flat() { tr '\n' ' ' <"$1" | tr -s ' '; }
mismatched=0
count_check() {
    local doc=$1 doc_re=$2 raw=$3 raw_re=$4 what=$5 in_doc in_raw
    in_doc=$(flat "$doc" | grep -oP "$doc_re" | head -n 1 || true)
    in_raw=$(flat "$raw" | grep -oP "$raw_re" | tail -n 1 || true)
    if [[ -z "$in_doc" || -z "$in_raw" ]]; then
        echo "COUNT $doc: $what: not found (document: '${in_doc}', $raw: '${in_raw}')"
        mismatched=$((mismatched + 1))
    elif [[ "$in_doc" != "$in_raw" ]]; then
        echo "COUNT $doc: $what is $in_doc, $raw says $in_raw"
        mismatched=$((mismatched + 1))
    fi
}
tests=bench/results/2026-11-27-test-count.txt
rows=bench/results/2026-11-27-goro-bench-list.txt
count_check README.md '\(\K[0-9]+(?= tests in [0-9]+ min [0-9]+ s)' \
    "$tests" 'tests run \(passed \+ failed\): \K[0-9]+' "the test count of cargo test --workspace"
count_check README.md '\([0-9]+ tests in \K[0-9]+ min [0-9]+ s(?= )' \
    "$tests" 'wall time: [0-9]+ s \(\K[0-9]+ min [0-9]+ s(?=\))' "the time of cargo test --workspace"
count_check README.md '`compare --full` runs all \K[0-9]+(?= rows)' \
    "$rows" '\K[0-9]+(?= rows in `compare --full` at procs 1,2)' "compare --full's rows"
count_check README.md 'about a minute after the build \(\K[0-9]+(?= rows)' \
    "$rows" '\K[0-9]+(?= rows in the default `compare`)' "the default compare's rows"
if ((mismatched > 0)); then
    echo "check-results: $mismatched counts in the documents differ from their raw files"
    exit 1
fi
echo "check-results: the counts the README gives match their raw files"
