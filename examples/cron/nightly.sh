#!/bin/sh
# Nightly near-duplicate check of one day's crawl against every page kept on the nights
# before it.
#
#   nightly.sh CRAWL [DAY]
#
# CRAWL/DAY/ is the night's folder, one page per file (DAY: today by default, YYYY-MM-DD:
# a crawler that names its folder for the day it started, run after midnight, gives
# DAY, e.g. `nightly.sh CRAWL "$(date -d yesterday +%F)"`). Without it, the log says so
# and nothing runs (exit 3).
# Written beside it, not in it (so the next run does not read them as pages):
#   DAY.unique.txt       the paths of the pages to keep
#   DAY.duplicates.tsv   each duplicate, the page it duplicates and the night that kept it
#   DAY.report.jsonl     one record per page
#   DAY.summary.json     the counts
#   DAY.stderr.txt       input problems, then the summary line
# CRAWL/index.sdx keeps the fingerprint of every page kept so far (simdedup --index), and
# CRAWL/simdedup.log gets one line per night. The exit status is simdedup's.
#
# A day run again (by hand, or after a run that was stopped) keeps the first run's files
# and writes its own as DAY.2.*, DAY.3.* (run name DAY.2, ...). After a run that ended
# (exit 0 or 3) or was stopped by Ctrl-C or SIGTERM (exit 130, 143), the pages it kept
# are in the index, so the new run reports them as its duplicates. A run that was killed
# (kill -9, a crash) or failed (exit 2) left the index as it was: its files, with no
# DAY.summary.json beside them, are partial, and the new run lists its pages again;
# unless it was killed in the few milliseconds between the index's save and the
# summary's rename: then `simdedup index info` lists the run, and its pages are in.
#
# crontab: see crontab beside this file.
set -u
crawl=${1:?usage: nightly.sh CRAWL [DAY]}
day=${2:-$(date +%F)}
simdedup=${SIMDEDUP:-simdedup}
# No folder for the night (the crawl did not run, or names its folders otherwise): said
# in the log itself, and nothing run, so the index gets no empty run under the day's
# name (a trial found the cause only in DAY.stderr.txt, and the day's name taken).
if [ ! -d "$crawl/$day" ]; then
    printf '%s %s exit 3: no folder %s: nothing run\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$day" \
        "$crawl/$day" >>"$crawl/simdedup.log"
    echo "nightly.sh: no folder $crawl/$day: nothing run" >&2
    exit 3
fi
name=$day
n=1
while [ -e "$crawl/$name.summary.json" ] || [ -e "$crawl/$name.stderr.txt" ]; do
    n=$((n + 1))
    name=$day.$n
done
out=$crawl/$name

status=0
# --wait: if last night's run is still going, wait up to an hour for it instead of failing.
$simdedup scan "$crawl/$day" --index "$crawl/index.sdx" --run-name "$name" --wait 3600 \
    --unique "$out.unique.txt" --duplicates "$out.duplicates.tsv" \
    --report "$out.report.jsonl" --summary-json "$out.summary.json" \
    >/dev/null 2>"$out.stderr.txt" || status=$?

# The last line on stderr is the run's summary, or the error that stopped it.
printf '%s %s exit %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" "$status" \
    "$(tail -n 1 "$out.stderr.txt")" >>"$crawl/simdedup.log"
exit "$status"
