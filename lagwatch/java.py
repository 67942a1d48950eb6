"""The Java that Spark (and the jpype JMX backend) will start, found the way they find it.

`lagwatch check` reports it, and `lagwatch stream` asks before it starts Spark, so a missing or
old JDK is one line with the fix instead of a Java gateway traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

#: The oldest Java release Spark 4 runs on.
MIN_JAVA = 17
JDK_FIX = f"install a JDK {MIN_JAVA}+ (apt-get install openjdk-{MIN_JAVA}-jre-headless) or set JAVA_HOME"
_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


class JdkMissing(RuntimeError):
    """No usable Java: the message says where Lagwatch looked and how to fix it."""


def java_binary() -> tuple[str | None, str]:
    """(the java Spark would start, where it was looked for): JAVA_HOME first, as PySpark does, else PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return (str(candidate) if candidate.is_file() else None), f"JAVA_HOME={home}"
    return shutil.which("java"), "PATH"


def java_major(version_text: str) -> int | None:
    """17 from 'openjdk version "17.0.2"', 8 from 'java version "1.8.0_392"'."""
    match = _JAVA_VERSION.search(version_text)
    if not match:
        return None
    first, second = int(match.group(1)), match.group(2)
    return int(second) if first == 1 and second else first


def require_java() -> tuple[str, int]:
    """(path, major version) of a usable Java; JdkMissing (with the fix) when there is none."""
    java, looked = java_binary()
    if java is None:
        raise JdkMissing(f"no java found (looked in {looked})")
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JdkMissing(f"{java} -version failed: {exc}") from None
    text = done.stderr + done.stdout
    major = java_major(text)
    if major is None:
        raise JdkMissing(f"{java} -version printed no version ({text.strip()[:80]!r})")
    if major < MIN_JAVA:
        raise JdkMissing(f"Java {major} at {java} is older than {MIN_JAVA}")
    return java, major


def require_java_for(what: str) -> tuple[str, int]:
    """`require_java()`, with a refusal that names who needs Java and the fix."""
    try:
        return require_java()
    except JdkMissing as exc:
        raise JdkMissing(f"{what} needs Java {MIN_JAVA}+: {exc} — {JDK_FIX}") from None
