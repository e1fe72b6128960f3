"""The Android demo's committed Gradle wrapper is the one docs/android.md records (#30).

The jar's SHA-256 must equal the line in docs/android.md (Gradle's published checksum of the 8.10.2
wrapper), the scripts must be there (``gradlew`` executable), and the properties must name the Gradle
version the docs state. With a JDK, the jar must also start and read its properties: pointed at a
distribution that does not exist, it fails at the download, naming it, not at class loading.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "android_demo"
JAR = DEMO / "gradle" / "wrapper" / "gradle-wrapper.jar"
PROPERTIES = DEMO / "gradle" / "wrapper" / "gradle-wrapper.properties"
DOC = ROOT / "docs" / "android.md"


def _recorded_sha256() -> str:
    found = re.findall(r"gradle-wrapper\.jar sha256 ([0-9a-f]{64})", DOC.read_text(encoding="utf-8"))
    assert len(found) == 1, "docs/android.md must record the wrapper jar's SHA-256 once"
    return found[0]


def _properties() -> dict[str, str]:
    lines = PROPERTIES.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_the_wrapper_jar_is_the_one_the_docs_record():
    assert hashlib.sha256(JAR.read_bytes()).hexdigest() == _recorded_sha256()
    with zipfile.ZipFile(JAR) as jar:
        assert jar.testzip() is None
        assert "org/gradle/wrapper/GradleWrapperMain.class" in jar.namelist()


def test_the_scripts_and_properties_are_committed_and_name_the_documented_gradle():
    gradlew, bat = DEMO / "gradlew", DEMO / "gradlew.bat"
    assert gradlew.read_text(encoding="utf-8").startswith("#!/bin/sh")
    assert "gradle/wrapper/gradle-wrapper.jar" in gradlew.read_text(encoding="utf-8")
    assert os.name == "nt" or os.access(gradlew, os.X_OK)
    assert "GradleWrapperMain" in bat.read_text(encoding="utf-8")
    url = _properties()["distributionUrl"]
    version = re.fullmatch(r"https\\://services\.gradle\.org/distributions/gradle-([0-9.]+)-bin\.zip", url)
    assert version, url
    assert f"Gradle {version.group(1)}" in DOC.read_text(encoding="utf-8")
    # A checksum line would have to be Gradle's own (see docs/android.md); none is recorded, none is set.
    assert "distributionSha256Sum" not in _properties()


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK: the JVM-free checks above still ran")
def test_the_wrapper_starts_and_fails_only_at_the_download(tmp_path):
    wrapper = tmp_path / "gradle" / "wrapper"
    wrapper.mkdir(parents=True)
    shutil.copy(JAR, wrapper / JAR.name)
    missing = tmp_path / "no-such-gradle-bin.zip"
    props = {**_properties(), "distributionUrl": missing.as_uri().replace(":", "\\:")}
    (wrapper / PROPERTIES.name).write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    proc = subprocess.run(["java", "-cp", str(wrapper / JAR.name), "org.gradle.wrapper.GradleWrapperMain", "--version"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "GRADLE_USER_HOME": str(tmp_path / "home")})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no-such-gradle-bin.zip" in out and "FileNotFoundException" in out, out
    assert "ClassNotFoundException" not in out and "NoClassDefFoundError" not in out
