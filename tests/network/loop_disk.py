"""A disk of its own for a test: an ext4 filesystem in an image file, attached
to a loop device and mounted; and a copy of that disk as a power cut would
leave it (`crash_copy`). Needs root, `losetup`, `mkfs.ext4`, `e2fsck` and
`mount` (`why_not` says what is missing); used by `test_power_cut.py`.

The loop device writes what the filesystem sends it into the image file
(through the page cache of the filesystem the image lies on): the image
holds every write the disk was given, and nothing that is still only in
the page cache of the mounted filesystem (unsynced data, waiting for the
kernel's writeback). Reading the image file is reading the disk: a disk
without a volatile write cache, which keeps every write it completed (one
that lost the writes it had not flushed yet would be harsher still).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.deadlines import HANG

TOOLS = ("losetup", "mkfs.ext4", "e2fsck", "mount", "umount")
COPY_TRIES = 20  # pairs of copies that differ, at most, before giving up


def run(*command: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`command`, its output kept; AssertionError with its stderr if it
    fails and `check`."""
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=HANG, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, command))}: exit status {done.returncode}\n"
            f"{done.stdout}{done.stderr}"
        )
    return done


def make_ext4(image: Path, size: int) -> None:
    """A new image file of `size` bytes (sparse) holding an empty ext4."""
    with open(image, "wb") as file:
        file.truncate(size)
    run("mkfs.ext4", "-q", "-F", image)


class LoopDisk:
    """`image` attached to a loop device and mounted at `mount_point`, until
    `release` (which a test calls in `finally`, whatever happened)."""

    def __init__(self, image: Path, mount_point: Path) -> None:
        self.image = image
        self.mount_point = mount_point
        self.device: str | None = None
        self.mounted = False

    def attach(self) -> LoopDisk:
        """Attach the image to a free loop device and mount it."""
        self.mount_point.mkdir(parents=True, exist_ok=True)
        self.device = run("losetup", "-f", "--show", self.image).stdout.strip()
        run("mount", "-t", "ext4", self.device, self.mount_point)
        self.mounted = True
        return self

    def release(self) -> None:
        """Unmount and detach, as far as either was done (again: nothing).
        A mount that stays busy is detached lazily, so that nothing is
        left mounted; AssertionError if even that fails."""
        problems: list[str] = []
        if self.mounted:
            done = run("umount", self.mount_point, check=False)
            if done.returncode != 0:
                problems.append(done.stderr.strip())
                lazy = run("umount", "-l", self.mount_point, check=False)
                if lazy.returncode != 0:
                    problems.append(lazy.stderr.strip())
            self.mounted = False
        if self.device is not None:
            # (after a lazy unmount, the device goes once the last file is closed)
            done = run("losetup", "-d", self.device, check=False)
            if done.returncode != 0:
                problems.append(done.stderr.strip())
            self.device = None
        assert not problems, "; ".join(problems)


def why_not(tmp_path: Path) -> str | None:
    """None if this machine can make, attach and mount an ext4 image here;
    else why not (for `pytest.skip`)."""
    if os.geteuid() != 0:
        return "needs root: it attaches a loop device and mounts a filesystem"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"not installed: {', '.join(missing)} (e2fsprogs, mount)"
    image = tmp_path / "probe.img"
    disk = LoopDisk(image, tmp_path / "probe")
    try:
        make_ext4(image, 8 << 20)
        disk.attach()
    except AssertionError as exc:  # (its stderr on the line: a skip shows one)
        return f"no ext4 over a loop device here: {' '.join(str(exc).split())}"
    finally:
        disk.release()
        image.unlink(missing_ok=True)
    return None


def crash_copy(image: Path, copy: Path) -> int:
    """Copy `image` to `copy` as a disk that lost its power now would have
    it; how many copies that took.

    Nothing syncs, freezes or unmounts the filesystem first: what is only
    in its page cache must stay out of the copy, as a power cut loses it.
    The kernel may still be writing to the disk meanwhile (its writeback,
    the ext4 journal's commits), and a write that lands while the image is
    read could leave the copy with half of it, a state the disk never had.
    So the image is copied twice in a row, until two copies are the same
    byte for byte: no write landed while the first of them was made, and it
    is the disk as it was then."""
    previous = copy.with_name(copy.name + ".previous")
    shutil.copyfile(image, previous)
    for made in range(2, COPY_TRIES + 2):
        shutil.copyfile(image, copy)
        if same(previous, copy):
            previous.unlink()
            return made
        os.replace(copy, previous)
    raise AssertionError(f"{image} kept changing: {COPY_TRIES + 1} copies, no two the same")


def same(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes."""
    with open(a, "rb") as one, open(b, "rb") as other:
        while True:
            chunk = one.read(1 << 20)
            if chunk != other.read(1 << 20):
                return False
            if not chunk:
                return True


def fsck(image: Path) -> str:
    """e2fsck of an image, as a machine does when it starts after a power
    cut (it replays the ext4 journal); what it said. Exit status 0 (clean)
    and 1 (errors corrected) are fine; anything else is an AssertionError."""
    done = run("e2fsck", "-f", "-y", image, check=False)
    assert done.returncode in (0, 1), f"e2fsck: exit status {done.returncode}\n{done.stdout}"
    return done.stdout
