"""deploy/: what can be checked without a container runtime or a systemd
that runs units. The Dockerfile is parsed (its instructions, the files it
copies, and every `oriflamme` command it runs read by the real command
line parser); the systemd unit goes through `systemd-analyze verify` and
`systemd-analyze security` where systemd-analyze exists (skipped, saying
so, elsewhere), and its settings are read: no restart after exit status 2
(which `oriflamme serve` gives when a person is needed), a memory limit,
the program in the virtual environment deploy/README.md installs. The
compose file is read line by line (no YAML library): the port on a named
address, an init, memory, process and log limits, and its own-certificate
example. Building and running the image needs a Docker daemon, which the
test machines do not have (deploy/README.md says how it was checked)."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from oriflamme.launcher.cli import build_parser
from tests.deadlines import HANG
from tests.network.server_process import COMMAND

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
    copied = set()
    for word, rest in instructions:
        if word == "COPY":
            *sources, _ = shlex.split(rest)
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
            copied.update(sources)
    # Every folder the package is built from (a new one, say the launcher's):
    # `pip install .` in the image would leave out one not copied.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = set(config["tool"]["setuptools"]["package-dir"].values())
    assert folders <= copied, f"folders not copied into the image: {sorted(folders - copied)}"
    # ... and every file a build step is loaded from (the catalogs' compiler)
    steps = {
        name.rpartition(".")[0].replace(".", "/") + ".py"
        for name in config["tool"]["setuptools"]["cmdclass"].values()
    }
    assert steps <= copied, f"build steps not copied into the image: {sorted(steps - copied)}"
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


def unit_settings() -> dict[str, list[str]]:
    """The systemd unit's settings, `Section.Key` -> its values in order."""
    settings: dict[str, list[str]] = {}
    section = ""
    for line in (DEPLOY / "oriflamme.service").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            settings.setdefault(f"{section}.{key}", []).append(value)
    return settings


def size_in_bytes(value: str) -> int:
    """A systemd size (`2G`, `512M`, a number of bytes)."""
    found = re.fullmatch(r"(\d+)([KMGT]?)", value)
    assert found is not None, f"not a size: {value!r}"
    return int(found.group(1)) * 1024 ** "_KMGT".index(found.group(2) or "_")


def test_the_unit_restarts_only_when_that_can_help_and_bounds_its_memory() -> None:
    unit = unit_settings()
    assert unit["Service.Restart"] == ["on-failure"]
    # Exit status 2: a full disk, a data directory or TLS files it cannot
    # use, a bad option (see the next test): starting again would loop.
    assert "2" in " ".join(unit["Service.RestartPreventExitStatus"]).split()
    assert size_in_bytes(unit["Service.MemoryMax"][-1]) >= 1 << 30
    # A bot's search worker killed for memory must not stop the server.
    assert unit["Service.OOMPolicy"] == ["continue"]
    assert "Service.TasksMax" in unit and "Unit.StartLimitBurst" in unit
    for hardening in ("NoNewPrivileges", "PrivateTmp", "DynamicUser"):
        assert unit[f"Service.{hardening}"] == ["yes"], hardening
    assert unit["Service.ProtectSystem"] == ["strict"]
    # The program where deploy/README.md installs it: a virtual environment.
    program = unit["Service.ExecStart"][0].split()[0]
    venv = str(Path(program).parent.parent)
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert program == f"{venv}/bin/oriflamme" and venv.startswith("/opt/")
    assert f"python3 -m venv {venv}" in readme and f"{venv}/bin/pip install ." in readme


def test_the_readme_installs_into_a_virtual_environment_never_with_sudo_pip() -> None:
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    commands = "\n".join(re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S))
    # PEP 668: Debian 12 refuses `pip install` outside a virtual environment.
    installs = re.findall(r"^.*\bpip3? install\b.*$", commands, re.M)
    assert installs and all("/bin/pip install" in line for line in installs), installs


@pytest.mark.process
def test_serve_exits_with_2_when_a_person_is_needed(tmp_path: Path) -> None:
    """The status the unit does not restart after (a data directory it
    cannot use: a full disk mid-game gives it too, tests/network/test_disk.py)."""
    (tmp_path / "not-a-directory").write_text("")
    done = subprocess.run(
        [*COMMAND, "serve", "--port", "0", "--data-dir", str(tmp_path / "not-a-directory")],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot use the data directory" in done.stderr
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert "RestartPreventExitStatus=2" in readme and "| 2 |" in readme


def compose_lines() -> list[str]:
    return (DEPLOY / "docker-compose.yml").read_text(encoding="utf-8").splitlines()


def compose_value(key: str) -> str:
    """The value of the one uncommented `key:` of the compose file."""
    values = [
        line.split(":", 1)[1].strip()
        for line in compose_lines()
        if line.strip().startswith(f"{key}:") and not line.lstrip().startswith("#")
    ]
    assert len(values) == 1, f"{key}: {values}"
    return values[0].strip('"')


def test_the_compose_file_publishes_on_a_named_address_with_limits_and_an_init() -> None:
    lines = [line.strip() for line in compose_lines() if not line.lstrip().startswith("#")]
    # The port on a named address: Docker lets a port published on every
    # address past ufw and firewalld.
    published = [line for line in lines if line.endswith(':7531:7531"')]
    assert len(published) == 1, published
    address = published[0].removeprefix('- "').removesuffix(':7531:7531"')
    default = re.fullmatch(r"\$\{\w+:-([^}]+)\}", address)
    assert ipaddress.ip_address(default.group(1) if default else address).is_loopback
    assert not any(re.fullmatch(r'- "?7531:7531"?', line) for line in lines)
    assert compose_value("init") == "true"
    assert size_in_bytes(compose_value("mem_limit").upper()) >= 1 << 30
    assert int(compose_value("pids_limit")) > 0
    assert compose_value("driver") == "json-file"
    assert compose_value("max-size") and int(compose_value("max-file")) >= 1
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert "ufw" in readme and "firewalld" in readme and "chown 10001:10001" in readme


def test_the_compose_files_own_certificate_example_checks_that_certificate() -> None:
    """The image's healthcheck looks for the self-signed certificate: with a
    certificate of one's own it would stay unhealthy, so the example has its
    own healthcheck, pinning the certificate served."""
    commented = [
        line.lstrip()[1:].strip() for line in compose_lines() if line.lstrip().startswith("#")
    ]
    command = next(line for line in commented if line.startswith("command:"))
    test = next(line for line in commented if line.startswith("test:"))
    assert "healthcheck:" in commented
    instructions = dict(dockerfile_instructions())
    served = build_parser().parse_args(
        exec_form(instructions["ENTRYPOINT"])[1:] + exec_form(command.removeprefix("command:"))
    )
    check = exec_form(test.removeprefix("test:"))
    assert check[:2] == ["CMD", "oriflamme"]
    checked = build_parser().parse_args(check[2:])
    assert served.tls_cert and not served.tls_self_signed
    assert checked.check and checked.port == served.port and checked.tls_cert == served.tls_cert
