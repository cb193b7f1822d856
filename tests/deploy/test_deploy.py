"""deploy/: what can be checked without a container runtime or a systemd
that runs units. The Dockerfile is parsed (its instructions, the files it
copies, and every `oriflamme` command it runs read by the real command
line parser); the systemd unit goes through `systemd-analyze verify` and
`systemd-analyze security` where systemd-analyze exists (skipped, saying
so, elsewhere). Building and running the image needs a Docker daemon,
which the test machines do not have (deploy/README.md says how it was
checked)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from oriflamme.client.cli import build_parser
from tests.deadlines import HANG

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
INSTRUCTIONS = {
    "FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "VOLUME", "EXPOSE", "HEALTHCHECK",
    "STOPSIGNAL", "ENTRYPOINT", "CMD", "ARG", "LABEL",
}  # fmt: skip


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)  # continuation lines
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word, rest.strip()))
    return out


def exec_form(rest: str) -> list[str]:
    value = json.loads(rest)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), rest
    return value


def test_the_dockerfile_reads_well_and_its_commands_are_real() -> None:
    instructions = dockerfile_instructions()
    words = [w for w, _ in instructions]
    assert set(words) <= INSTRUCTIONS, set(words) - INSTRUCTIONS
    assert words[0] == "FROM"
    for word, rest in instructions:
        if word == "COPY":
            *sources, _ = shlex.split(rest)
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
    user = [rest for word, rest in instructions if word == "USER"]
    assert user and user[-1] not in ("root", "0"), "the server must not run as root"
    assert "VOLUME" in words and "HEALTHCHECK" in words
    entry = exec_form(dict(instructions)["ENTRYPOINT"])
    cmd = exec_form(dict(instructions)["CMD"])
    assert entry[0] == "oriflamme"
    served = build_parser().parse_args(entry[1:] + cmd)
    assert served.command == "serve" and served.host == "0.0.0.0" and served.no_discovery
    health = dict(instructions)["HEALTHCHECK"]
    check = exec_form(health[health.index("CMD") + 3 :].strip())
    assert check[0] == "oriflamme"
    checked = build_parser().parse_args(check[1:])
    assert checked.check and checked.data_dir == served.data_dir
    assert checked.tls_self_signed == served.tls_self_signed  # the same certificate pinned


def test_the_compose_file_builds_that_dockerfile() -> None:
    text = (DEPLOY / "docker-compose.yml").read_text(encoding="utf-8")
    assert "dockerfile: deploy/Dockerfile" in text and "context: .." in text
    assert (DEPLOY / ".." / "deploy" / "Dockerfile").exists()
    assert "7531:7531" in text and "/data" in text


SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.mark.process
@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed here")
def test_the_systemd_unit_verifies_and_is_sandboxed(tmp_path: Path) -> None:
    unit = (DEPLOY / "oriflamme.service").read_text(encoding="utf-8")
    command = re.search(r"^ExecStart=(\S+) (.*)$", unit, re.M)
    assert command is not None
    args = command.group(2).replace("${STATE_DIRECTORY}", "/var/lib/oriflamme").split()
    assert build_parser().parse_args(args).command == "serve"
    # verify wants the binary to exist: the unit as it would be, with /bin/true in its place
    checked = tmp_path / "oriflamme.service"
    checked.write_text(unit.replace(command.group(1), "/bin/true"), encoding="utf-8")
    verify = subprocess.run(
        [str(SYSTEMD_ANALYZE), "verify", str(checked)],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert verify.returncode == 0 and verify.stderr.strip() == "", verify.stderr
    security = subprocess.run(
        [str(SYSTEMD_ANALYZE), "security", "--offline=true", str(checked)],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    exposure = re.search(r"Overall exposure level for \S+: ([\d.]+)", security.stdout)
    if exposure is None:
        pytest.skip(f"this systemd-analyze has no offline security check: {security.stderr}")
    assert float(exposure.group(1)) <= 2.0, security.stdout
