#!/usr/bin/env bash
# JVM check of the Android demo's pure-Java core (android_demo/albert-core): compile it at the
# Java 8 language level, run its JUnit 5 tests (golden parity with the Python tokenizer, pack
# reader, scores, latency statistics, the task API through InferenceEngine), print the time to
# first model input measured in fresh JVMs as one JSON line (reported, never judged), publish the
# jar to a local Maven repository under its coordinates and compile and run a consumer against the
# jar resolved from there; print "N passed, N failed" alone on the last line (the JUnit tests, plus
# one check each for the timing run and for publish-and-consume).
#
# The local Maven repository is $ALBERT_CORE_M2 if set (e.g. android_demo/build/m2, ignored by git),
# else a temporary directory removed at exit.
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

# Time to first model input (issue #32): each committed model file in a fresh JVM. Printed, not judged.
echo "albert-core time to first model input on this JVM (one fresh JVM per model; reported, not judged):"
if timing=$(java -cp "$work/main:$work/test:$json_jar" org.albertedge.core.FirstAnswerTiming \
    "$core"/src/test/resources/*.tflite); then
  echo "$timing"
  passed=$((passed + 1))
else
  echo "albert-core timing run FAILED" >&2
  failed=$((failed + 1))
  status=1
fi

# ---- publish albert-core to a local Maven repository and consume it by its coordinates ----
gradle_value() {  # the quoted value of `KEY = "..."` in albert-core/build.gradle.kts
  sed -n "s/^$1 = \"\\(.*\\)\"\$/\\1/p" "$core/build.gradle.kts"
}

checksums() {  # FILE: FILE.sha1 and FILE.md5, the bare hex digests Maven repositories hold
  sha1sum "$1" | cut -d' ' -f1 > "$1.sha1" && md5sum "$1" | cut -d' ' -f1 > "$1.md5"
}

publish_local() {  # REPO GROUP ARTIFACT VERSION JAR SOURCES_JAR: the layout `mvn install` writes
  local repo=$1 group=$2 artifact=$3 version=$4 jar=$5 sources=$6
  local base="$repo/${group//.//}/$artifact"
  local dir="$base/$version"
  mkdir -p "$dir" || return 1
  cp "$jar" "$dir/$artifact-$version.jar" && cp "$sources" "$dir/$artifact-$version-sources.jar" || return 1
  cat > "$dir/$artifact-$version.pom" <<POM || return 1
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>$group</groupId>
  <artifactId>$artifact</artifactId>
  <version>$version</version>
  <packaging>jar</packaging>
  <name>$artifact</name>
  <description>albert-edge's Java core: WordPiece and SentencePiece tokenizers with offsets, the model-pack reader, and classification, NER, QA and embeddings behind an InferenceEngine</description>
  <licenses>
    <license>
      <name>Apache-2.0</name>
      <url>https://www.apache.org/licenses/LICENSE-2.0</url>
    </license>
  </licenses>
</project>
POM
  local f
  for f in "$dir/$artifact-$version.jar" "$dir/$artifact-$version-sources.jar" "$dir/$artifact-$version.pom"; do
    checksums "$f" || return 1
  done
  cat > "$base/maven-metadata-local.xml" <<META || return 1
<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>$group</groupId>
  <artifactId>$artifact</artifactId>
  <versioning>
    <release>$version</release>
    <versions>
      <version>$version</version>
    </versions>
    <lastUpdated>$(date -u +%Y%m%d%H%M%S)</lastUpdated>
  </versioning>
</metadata>
META
}

resolve_artifact() {  # REPO GROUP ARTIFACT VERSION: print the jar's path, as a resolver finds it
  local repo=$1 group=$2 artifact=$3 version=$4
  local base="$repo/${group//.//}/$artifact"
  local pom="$base/$version/$artifact-$version.pom" jar="$base/$version/$artifact-$version.jar"
  if ! grep -q "<version>$version</version>" "$base/maven-metadata-local.xml" 2>/dev/null; then
    echo "resolve $group:$artifact:$version: not listed in $base/maven-metadata-local.xml" >&2; return 1
  fi
  local tag
  for tag in "groupId>$group<" "artifactId>$artifact<" "version>$version<"; do
    if ! grep -q "<$tag" "$pom" 2>/dev/null; then
      echo "resolve $group:$artifact:$version: $pom lacks <${tag%<}" >&2; return 1
    fi
  done
  local f
  for f in "$pom" "$jar"; do
    if [ "$(sha1sum "$f" | cut -d' ' -f1)" != "$(cat "$f.sha1" 2>/dev/null)" ]; then
      echo "resolve $group:$artifact:$version: $f does not match $f.sha1" >&2; return 1
    fi
  done
  echo "$jar"
}

publish_and_consume() {
  local group version repo jar
  group=$(gradle_value group)
  version=$(gradle_value version)
  if [ -z "$group" ] || [ -z "$version" ]; then
    echo "no group/version in $core/build.gradle.kts" >&2; return 1
  fi
  repo="${ALBERT_CORE_M2:-$work/m2}"
  mkdir -p "$work/pkg" && printf 'Automatic-Module-Name: org.albertedge.core\nImplementation-Version: %s\n' \
    "$version" > "$work/pkg/manifest.txt" || return 1
  jar --create --file "$work/pkg/albert-core.jar" --manifest "$work/pkg/manifest.txt" -C "$work/main" . \
    && jar --create --file "$work/pkg/albert-core-sources.jar" -C "$core/src/main/java" . || return 1
  publish_local "$repo" "$group" albert-core "$version" "$work/pkg/albert-core.jar" \
    "$work/pkg/albert-core-sources.jar" || return 1
  echo "published $group:albert-core:$version to $repo:"
  (cd "$repo" && find . -type f | sort | sed 's/^\.\//  /')
  jar=$(resolve_artifact "$repo" "$group" albert-core "$version") || return 1
  echo "resolved $group:albert-core:$version -> $jar"
  mkdir -p "$work/consumer" || return 1
  javac --release 8 -encoding UTF-8 -Xlint:all -Werror -cp "$jar:$json_jar" -d "$work/consumer" \
    "$here/consumer-check/src/org/albertedge/example/ConsumerCheck.java" || return 1
  java -cp "$jar:$json_jar:$work/consumer" org.albertedge.example.ConsumerCheck \
    "$core/src/test/resources/pack_fixture.tflite"
}

if publish_and_consume; then
  passed=$((passed + 1))
else
  echo "albert-core publish-and-consume check FAILED (above)" >&2
  failed=$((failed + 1))
  status=1
fi

echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
