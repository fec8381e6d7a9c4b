"""Finding a Java runtime of version 17 or later."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from failsafe.errors import ProvisionError
from failsafe.supervisor import run_to_end

MIN_JAVA_MAJOR = 17
INSTALL_HINT = "install Java 17 or later (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"


@dataclass(frozen=True)
class Java:
    executable: Path
    major: int


def major_version(version_output: str) -> int | None:
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not match:
        return None
    first = int(match.group(1))
    # Java 8 and older report "1.8.0_x".
    return int(match.group(2)) if first == 1 and match.group(2) else first


def find_java() -> Java:
    """The Java to run Kafka with: $JAVA_HOME/bin/java, else java on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / "java" if java_home else None
    if candidate is None or not candidate.is_file():
        found = shutil.which("java")
        if found is None:
            raise ProvisionError(f"no Java found: {INSTALL_HINT}")
        candidate = Path(found)
    try:
        out = run_to_end([str(candidate), "-version"], name="java -version", timeout_s=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProvisionError(f"{candidate} -version failed ({e}): {INSTALL_HINT}") from e
    major = major_version(out.output)
    if major is None:
        raise ProvisionError(f"cannot read the version of {candidate}: {INSTALL_HINT}")
    if major < MIN_JAVA_MAJOR:
        raise ProvisionError(f"{candidate} is Java {major}, Kafka needs {MIN_JAVA_MAJOR}+: {INSTALL_HINT}")
    return Java(executable=candidate, major=major)
