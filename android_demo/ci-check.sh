#!/usr/bin/env bash
# JVM check of the Android demo's pure-Java core (android_demo/albert-core): compile it at the
# Java 8 language level, run its JUnit 5 tests (golden parity with the Python tokenizer, pack
# reader, scores, latency statistics) and print "N passed, N failed" alone on the last line.
#
# Gradle cannot run here (Google's Maven repository is unreachable), so this uses javac and the
# JUnit console launcher from Debian's junit5 package, plus Android's org.json implementation
# from libandroid-json-org-java (the same API the phone provides).
# Exits 0 with a SKIPPED line when no JDK is installed; non-zero when anything fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
core="$here/albert-core"
java_dir=/usr/share/java
launcher="$java_dir/junit-platform-console-standalone.jar"
json_jar="$java_dir/json-android.jar"

if ! command -v javac >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "albert-core JVM check SKIPPED: javac/java not found (install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless)"
  exit 0
fi

if [ ! -f "$launcher" ] || [ ! -f "$json_jar" ]; then
  echo "installing Debian packages junit5 and libandroid-json-org-java"
  if [ "$(id -u)" -eq 0 ]; then sudo_cmd=""; else sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq junit5 libandroid-json-org-java >/dev/null
fi
for jar in "$launcher" "$json_jar"; do
  if [ ! -f "$jar" ]; then
    echo "albert-core JVM check FAILED: $jar missing after installing its package" >&2
    echo "0 passed, 1 failed"
    exit 1
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/main" "$work/test"

echo "compiling albert-core (javac --release 8)"
find "$core/src/main/java" -name '*.java' > "$work/main.txt"
find "$core/src/test/java" -name '*.java' > "$work/test.txt"
if ! javac --release 8 -encoding UTF-8 -Xlint:all -Werror -cp "$json_jar" -d "$work/main" @"$work/main.txt" \
   || ! javac --release 8 -encoding UTF-8 -cp "$work/main:$json_jar:$launcher" -d "$work/test" @"$work/test.txt"; then
  echo "albert-core JVM check FAILED: compilation error (above)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

echo "running JUnit 5 tests"
status=0
java -jar "$launcher" \
  --class-path "$work/main:$work/test:$core/src/test/resources:$json_jar" \
  --scan-class-path "$work/test" \
  --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii 2>&1 | tee "$work/out.txt" || status=$?

passed=$(sed -n 's/.*\[ *\([0-9]*\) tests successful *\].*/\1/p' "$work/out.txt" | tail -1)
failed=$(sed -n 's/.*\[ *\([0-9]*\) tests failed *\].*/\1/p' "$work/out.txt" | tail -1)
passed=${passed:-0}
failed=${failed:-0}
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1
fi
if [ "$passed" -eq 0 ]; then
  echo "no tests ran: that is a failure" >&2
  status=1
  failed=$(( failed > 0 ? failed : 1 ))
fi
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
