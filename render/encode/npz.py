"""Trajectories as an uncompressed .npz, streamed a frame at a time (`NpzWriter`), and
the way to memory-map one of its arrays (`memmap`).

An .npz is a zip of .npy files. Every member's size is known once the first state
arrives (frames × birds × dimensions), so the whole archive is laid out then: each
member's zip header and .npy header at a fixed offset, its data after it. Each frame's
rows are written at their offsets as the frame arrives, each member's CRC-32 grows as its
rows are written in order, and closing patches the CRCs into the headers and writes the
zip's directory. The members are stored (ZIP_STORED) and start 64-byte aligned, so an
array can be mapped straight from the file (`memmap`). Zip64 records throughout: a
member may pass 4 GiB (20,000 birds × 3,600 frames in 3D is 2.1 GB a member).
"""

from __future__ import annotations

import contextlib
import struct
import zipfile
import zlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy

from ..errors import EncodeError
from .files import place_finished, refuse_existing, temp_beside

_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_LOCATOR = struct.Struct("<IIQI")
_EOCD = struct.Struct("<IHHHHIIH")
_ZIP64 = 45           # the zip version that reads zip64 records
_DOS_DATE = 33        # 1980-01-01, 00:00: the same scene gives the same bytes
_FULL = 0xFFFFFFFF    # "see the zip64 record"
_ALIGN = 64           # as numpy aligns an array's data after its .npy header
_PADDING_ID = 0xD935  # an extra field readers skip (zipalign's)


@dataclass
class _Member:
    """One .npy inside the archive: where its zip header and its data start, and its
    contents so far (bytes, CRC-32)."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int = 0
    data: int = 0
    size: int = 0
    crc: int = 0
    row: int = 0  # bytes one frame adds (0: written whole at the start)

    def npy_header(self) -> bytes:
        import io

        buf = io.BytesIO()
        npy.write_array_header_1_0(buf, {"descr": npy.dtype_to_descr(self.dtype),
                                         "fortran_order": False, "shape": self.shape})
        return buf.getvalue()


def memmap(path: str | Path, key: str) -> np.memmap:
    """Array `key` of an uncompressed .npz mapped read-only from the file, without
    reading it (np.load's mmap_mode does not reach into an .npz)."""
    with zipfile.ZipFile(path) as archive, open(path, "rb") as fh:
        info = archive.getinfo(f"{key}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{path}: {key} is compressed; only stored members map")
        fh.seek(info.header_offset + 26)  # the local header's name and extra lengths
        name_len, extra_len = struct.unpack("<HH", fh.read(4))
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        major, _ = npy.read_magic(fh)
        read = npy.read_array_header_1_0 if major == 1 else npy.read_array_header_2_0
        shape, fortran, dtype = read(fh)
        return np.memmap(path, dtype=dtype, mode="r", offset=fh.tell(), shape=shape,
                         order="F" if fortran else "C")


class NpzWriter:
    """A StateWriter: `frames` states of a scene (frames first, first+1, … in order)
    into `path`, uncompressed, written atomically (a temporary beside `path`, renamed
    into place when every frame is in). Members: positions, velocities (frames, n, d)
    float64; bank (frames, n) float64 radians; ids (n,) int64; accent (n,) bool; time
    (frames,) float64 s; fps 0-d unicode; with `hawk`, hawk (frames, d) float64, NaN while
    it is not out, hawk_velocity (frames, d) float64, NaN unless it is out over the whole
    step, and hawk_bank (frames,) float64 radians, NaN while it is not out; with `attack`
    (a hunting hawk), attack (frames,) bool; with `landed`, landed (frames, n) bool; each
    of `record` (`still.trajectory_record`: the scene, its digest, seed and version) 0-d
    unicode."""

    def __init__(self, path: str | Path, *, fps: Fraction, frames: int, first: int = 0,
                 hawk: bool = False, attack: bool = False, landed: bool = False,
                 overwrite: bool = True, record: dict[str, str] | None = None):
        self.path = Path(path)
        self.fps, self.frames, self.first = fps, frames, first
        self.hawk, self.attack, self.landed = hawk, attack, landed
        self.overwrite = overwrite
        refuse_existing(self.path, overwrite)  # before the flock is settled
        self.fps_text = np.array(str(fps))  # "30" or "24000/1001": exact, as --fps takes it
        self.record = {key: np.array(value) for key, value in (record or {}).items()}
        self.written = 0
        self.members: dict[str, _Member] = {}
        self.tmp: Path | None = None
        self.fh: BinaryIO | None = None

    def __enter__(self) -> NpzWriter:
        refuse_existing(self.path, self.overwrite)  # again: it may have appeared since
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = temp_beside(self.path, self.path.suffix)
        self.fh = open(self.tmp, "r+b")
        return self

    def write_state(self, state) -> None:
        """The next frame's state (a FrameState)."""
        index = self.first + self.written
        if state.index != index:
            raise ValueError(f"frame {state.index} given, frame {index} expected")
        try:  # a full disk shows here as an OSError
            if not self.members:
                self._lay_out(state)
            n, d = state.positions.shape
            bank = np.zeros(n) if state.bank is None else state.bank
            rows = {"time": np.float64(state.time), "positions": state.positions,
                    "velocities": state.velocities, "bank": bank}
            if self.hawk:
                out = state.hawk is not None
                rows["hawk"] = state.hawk if out else np.full(d, np.nan)
                rows["hawk_velocity"] = np.full(d, np.nan) if not out or \
                    state.hawk_velocity is None else state.hawk_velocity
                rows["hawk_bank"] = np.float64(state.hawk_bank if out else np.nan)
            if self.attack:
                rows["attack"] = np.bool_(state.attack)
            if self.landed:
                rows["landed"] = np.zeros(n, bool) if state.landed is None else state.landed
            for name, values in rows.items():
                member = self.members[name]
                self._append(member, np.ascontiguousarray(values, dtype=member.dtype),
                             member.data + self.written * member.row)
        except OSError as err:
            raise EncodeError(f"cannot write {self.path}: {err.strerror or err}") from None
        self.written += 1

    def _lay_out(self, state) -> None:
        """Every member's headers at its offset (the file's size is set, sparse where the
        file system allows), and the members known now (ids, accent, fps) written whole."""
        n, d = state.positions.shape
        f, f8 = self.frames, np.dtype(np.float64)
        shapes = {"ids": (np.int64, (n,)), "accent": (np.bool_, (n,)),
                  "fps": (self.fps_text.dtype, ()), "time": (f8, (f,)),
                  "positions": (f8, (f, n, d)), "velocities": (f8, (f, n, d)),
                  "bank": (f8, (f, n))}
        if self.hawk:
            shapes.update(hawk=(f8, (f, d)), hawk_velocity=(f8, (f, d)), hawk_bank=(f8, (f,)))
        if self.attack:
            shapes["attack"] = (np.bool_, (f,))
        if self.landed:
            shapes["landed"] = (np.bool_, (f, n))
        shapes.update({key: (text.dtype, ()) for key, text in self.record.items()})
        offset = 0
        for name, (dtype, shape) in shapes.items():
            member = _Member(name, np.dtype(dtype), shape, offset)
            header = member.npy_header()
            local = self._local_header(member, 0, len(header) + member.dtype.itemsize
                                       * int(np.prod(shape)))
            member.data = offset + len(local)
            self.fh.seek(offset)
            self.fh.write(local)
            self._append(member, np.frombuffer(header, np.uint8), member.data)
            member.data += len(header)
            member.row = member.dtype.itemsize * int(np.prod(shape[1:])) if shape else 0
            offset = member.data + member.dtype.itemsize * int(np.prod(shape))
            self.members[name] = member
        self.fh.truncate(offset)
        self._append(self.members["ids"], np.arange(n, dtype=np.int64))
        self._append(self.members["accent"], np.asarray(state.accent, dtype=np.bool_))
        self._append(self.members["fps"], self.fps_text)
        for key, text in self.record.items():
            self._append(self.members[key], text)

    def _append(self, member: _Member, values: np.ndarray, at: int | None = None) -> None:
        data = memoryview(values).cast("B") if values.ndim else values.tobytes()
        self.fh.seek(member.data if at is None else at)
        self.fh.write(data)
        member.crc = zlib.crc32(data, member.crc)
        member.size += len(data)

    def _local_header(self, member: _Member, crc: int, size: int) -> bytes:
        """The member's zip header: a zip64 extra field with its size, padded so that its
        data (the .npy header, whose own padding aligns the array) starts 64-aligned."""
        name = f"{member.name}.npy".encode()
        zip64 = struct.pack("<HHQQ", 1, 16, size, size)
        pad = -(member.offset + _LOCAL.size + len(name) + len(zip64)) % _ALIGN
        if 0 < pad < 4:  # an extra field is at least its 4-byte id and length
            pad += _ALIGN
        extra = zip64 + (struct.pack("<HH", _PADDING_ID, pad - 4) + bytes(pad - 4)
                         if pad else b"")
        return _LOCAL.pack(0x04034B50, _ZIP64, 0, 0, 0, _DOS_DATE, crc, _FULL, _FULL,
                           len(name), len(extra)) + name + extra

    def _finish(self) -> None:
        """Each member's CRC into its header, then the zip's central directory."""
        if self.written != self.frames:
            raise EncodeError(f"{self.path}: {self.written} of {self.frames} frames were "
                              f"given")
        end = self.fh.seek(0, 2)
        directory = b""
        for member in self.members.values():
            self.fh.seek(member.offset + 14)
            self.fh.write(struct.pack("<I", member.crc))
            name = f"{member.name}.npy".encode()
            extra = struct.pack("<HHQQQ", 1, 24, member.size, member.size, member.offset)
            directory += _CENTRAL.pack(0x02014B50, _ZIP64, _ZIP64, 0, 0, 0, _DOS_DATE,
                                       member.crc, _FULL, _FULL, len(name), len(extra), 0,
                                       0, 0, 0o644 << 16, _FULL) + name + extra
        count = len(self.members)
        self.fh.seek(end)
        self.fh.write(directory)
        self.fh.write(_EOCD64.pack(0x06064B50, _EOCD64.size - 12, _ZIP64, _ZIP64, 0, 0,
                                   count, count, len(directory), end))
        self.fh.write(_LOCATOR.pack(0x07064B50, 0, end + len(directory), 1))
        self.fh.write(_EOCD.pack(0x06054B50, 0, 0, count, count, len(directory),
                                 min(end, _FULL), 0))

    def __exit__(self, exc_type, exc_value, tb) -> None:
        exc = None  # this writer's own failure, not the one it is unwound by
        try:
            if exc_type is None:
                self._finish()
            self.fh.close()  # flushes: a full disk may only show here
            if exc_type is None:
                place_finished(self.tmp, self.path, overwrite=self.overwrite)
        except OSError as err:
            exc = err
        finally:
            with contextlib.suppress(OSError):
                self.fh.close()
            self.tmp.unlink(missing_ok=True)
        if exc is not None:  # a full disk while finishing
            raise EncodeError(f"cannot write {self.path}: {exc.strerror or exc}") from None
