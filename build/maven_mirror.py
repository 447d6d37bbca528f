"""Prints the URL of the Maven mirror that serves Maven Central on this machine, if one is configured.

build/sbt points sbt at the same place Maven already uses, read at run time so that
no repository host is written into the repository itself. Prints nothing when the
machine talks to Maven Central directly.
"""
import os
import sys
import xml.etree.ElementTree as ET

SETTINGS_FILES = [
    os.path.expanduser("~/.m2/settings.xml"),
    os.path.join(os.environ.get("MAVEN_HOME", "/usr/share/maven"), "conf", "settings.xml"),
    "/etc/maven/settings.xml",
]


def serves_central(mirror_of: str) -> bool:
    patterns = [p.strip() for p in mirror_of.split(",")]
    if "!central" in patterns:
        return False
    return "central" in patterns or "*" in patterns or "external:*" in patterns


def find_mirror() -> str:
    for path in SETTINGS_FILES:
        if not os.path.isfile(path):
            continue
        root = ET.parse(path).getroot()
        ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
        for mirror in root.iter(f"{ns}mirror"):
            blocked = (mirror.findtext(f"{ns}blocked") or "").strip() == "true"
            url = (mirror.findtext(f"{ns}url") or "").strip()
            if not blocked and url and serves_central(mirror.findtext(f"{ns}mirrorOf") or ""):
                return url
    return ""


if __name__ == "__main__":
    sys.stdout.write(find_mirror())
