"""Wire types: what each message field may hold, and the declarations built on them.

How this works
--------------
A message or a nested structure is a frozen dataclass declared with
`wire_struct` (or `messages.message`); each field is declared with
``wire(wire_type, doc)`` (required) or ``wire(wire_type, doc, default=None)``
(optional). That one declaration is the whole spec: `load_fields` checks and
converts a decoded msgpack map into the dataclass, the dataclass constructor
checks Python values, `dump_fields` turns it back into plain data, and the
catalog (docs/protocol-v1.json and the tables of docs/PROTOCOL.md, made by
``tools/docgen``) is generated from the same `FieldSpec` tuples.

A `WireType` knows three directions:

* ``load(wire_value)``: check a value as decoded from msgpack and convert it
  (a card ``["red", "soldier"]`` becomes an engine `Card`, a list a tuple, a
  map a struct);
* ``check(python_value)``: check a value given to a constructor;
* ``dump(python_value)``: the plain data to encode.

Both checks raise `Invalid`; the caller adds the field's path and turns it
into a `RemoteProtocolError` (decoding) or a `LocalProtocolError`
(constructing), both with code ``invalid_field``. A problem never shows the
offending value whole: values from the wire may be huge or nested, so they
are described by their type, or shown cut short (`shown`).

Optional fields may be absent or nil on the wire, which mean the same: the
Python value is None, and None is never encoded.

>>> from typing import Any
>>> @wire_struct("point")
... class Point(WireValue):
...     '''A point.'''
...     x: int = wire(UInt(0, 9), "Across.")
...     label: str | None = wire(Text(1, 8), "A name.", default=None)
>>> load_fields(Point, {"x": 3, "label": "a", "extra": "ignored"})
Point(x=3, label='a')
>>> load_fields(Point, {"x": 12})
Traceback (most recent call last):
...
oriflamme.protocol.schema.Invalid: x: expected 0..9, got 12
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

from oriflamme.engine import FAMILY_NAMES, Card, card_from_data, card_to_data
from oriflamme.engine.cards import shown

from .errors import INVALID_FIELD, LocalProtocolError

U32 = 2**32 - 1

# C0 and C1 control characters and DEL: refused in every text field, so that
# no peer can move a terminal's cursor or inject escape sequences.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_TOKEN = re.compile(r"[a-z][a-z0-9_]*\Z")


class Invalid(Exception):
    """A value that does not fit its field; `path` grows as it bubbles up."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path

    def within(self, name: str) -> Invalid:
        """The same problem, one level further out (``name`` is a field or ``[i]``)."""
        joined = (
            name + self.path
            if self.path.startswith("[")
            else ".".join(filter(None, (name, self.path)))
        )
        return Invalid(self.problem, joined)

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" if self.path else self.problem


def type_name(value: object) -> str:
    """What a decoded value is, in the words of docs/PROTOCOL.md."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "binary"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


class WireType:
    """A wire type. Subclasses override `load`, `check`, `dump` as needed."""

    name = "any"

    def load(self, value: object) -> Any:
        self.check(value)
        return value

    def check(self, value: object) -> None:
        raise NotImplementedError

    def dump(self, value: Any) -> object:
        return value

    def describe(self) -> dict[str, Any]:
        """The machine-readable description used in the JSON catalog."""
        return {"type": self.name}

    def notation(self) -> str:
        """A short human description for the document's tables."""
        return self.name


class UInt(WireType):
    """An integer in ``lo..hi`` (booleans are not integers here)."""

    name = "uint"

    def __init__(self, lo: int = 0, hi: int = U32) -> None:
        self.lo = lo
        self.hi = hi

    def check(self, value: object) -> None:
        if type(value) is not int:
            raise Invalid(f"expected an integer, got {type_name(value)}")
        if not self.lo <= value <= self.hi:
            raise Invalid(f"expected {self.lo}..{self.hi}, got {value}")

    def load(self, value: object) -> Any:
        if type(value) is not int or not self.lo <= value <= self.hi:
            self.check(value)
        return value

    def describe(self) -> dict[str, Any]:
        return {"type": "uint", "min": self.lo, "max": self.hi}

    def notation(self) -> str:
        return f"uint {self.lo}..{self.hi}"


class Int(UInt):
    """A signed integer in ``lo..hi`` (a rating, which may be below 0)."""

    name = "int"

    def describe(self) -> dict[str, Any]:
        return {"type": "int", "min": self.lo, "max": self.hi}

    def notation(self) -> str:
        return f"int {self.lo}..{self.hi}"


class Bool(WireType):
    name = "bool"

    def check(self, value: object) -> None:
        if type(value) is not bool:
            raise Invalid(f"expected true or false, got {type_name(value)}")

    def notation(self) -> str:
        return "bool"


class Text(WireType):
    """A UTF-8 string of ``lo..hi`` characters (code points), no control characters."""

    name = "text"

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi

    def check(self, value: object) -> None:
        if type(value) is not str:
            raise Invalid(f"expected a string, got {type_name(value)}")
        if not self.lo <= len(value) <= self.hi:
            raise Invalid(f"expected {self.lo}..{self.hi} characters, got {len(value)}")
        if _CONTROL.search(value):
            raise Invalid("control characters are not allowed")

    def describe(self) -> dict[str, Any]:
        return {"type": "text", "min_length": self.lo, "max_length": self.hi}

    def notation(self) -> str:
        return f"str, {self.lo}..{self.hi} characters"


_HIDDEN_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Co", "Cs", "Cn"})


class Name(Text):
    """Text shown to others as a name: besides `Text`'s rules, no format
    characters (a right-to-left override, a zero-width space...), line or
    paragraph separators, private-use or unassigned code points, and not blank,
    so that a name cannot hide itself or disguise another."""

    def check(self, value: object) -> None:
        super().check(value)
        assert isinstance(value, str)
        for ch in value:
            if unicodedata.category(ch) in _HIDDEN_CATEGORIES:
                raise Invalid(
                    f"U+{ord(ch):04X} is not allowed in a name (format, separator,"
                    " private-use and unassigned characters are refused)"
                )
        if not value.strip():
            raise Invalid("a name must show something: not only spaces")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "visible": True}

    def notation(self) -> str:
        return f"str, {self.lo}..{self.hi} characters, a visible name"


class Token(WireType):
    """A short lowercase identifier: ``[a-z][a-z0-9_]*``, at most `hi` characters."""

    name = "token"

    def __init__(self, hi: int = 32) -> None:
        self.hi = hi

    def check(self, value: object) -> None:
        if type(value) is not str:
            raise Invalid(f"expected a string, got {type_name(value)}")
        if not 1 <= len(value) <= self.hi or not _TOKEN.match(value):
            raise Invalid(
                f"expected a lowercase identifier of 1..{self.hi} characters, got {shown(value)}"
            )

    def describe(self) -> dict[str, Any]:
        return {"type": "token", "pattern": "[a-z][a-z0-9_]*", "max_length": self.hi}

    def notation(self) -> str:
        return f"str `[a-z][a-z0-9_]*`, 1..{self.hi} characters"


class OneOf(WireType):
    """One of a fixed set of strings."""

    name = "enum"

    def __init__(self, *values: str) -> None:
        self.values = values
        self._set = frozenset(values)

    def check(self, value: object) -> None:
        # A str enum (the engine's `Step`) is its value.
        if not isinstance(value, str) or value not in self._set:
            got = shown(value) if isinstance(value, str) else type_name(value)
            raise Invalid(f"expected one of {', '.join(self.values)}; got {got}")

    def dump(self, value: Any) -> object:
        return str(value)

    def describe(self) -> dict[str, Any]:
        return {"type": "enum", "values": list(self.values)}

    def notation(self) -> str:
        return " \\| ".join(f'`"{v}"`' for v in self.values)


class Bin(WireType):
    """Binary (msgpack bin) of exactly `size` bytes."""

    name = "bin"

    def __init__(self, size: int) -> None:
        self.size = size

    def check(self, value: object) -> None:
        if type(value) is not bytes:
            raise Invalid(f"expected {self.size} bytes of binary (bin), got {type_name(value)}")
        if len(value) != self.size:
            raise Invalid(f"expected {self.size} bytes, got {len(value)}")

    def describe(self) -> dict[str, Any]:
        return {"type": "bin", "length": self.size}

    def notation(self) -> str:
        return f"bin, {self.size} bytes"


class BinUpTo(WireType):
    """Binary (msgpack bin) of at most `most` bytes."""

    name = "bin"

    def __init__(self, most: int) -> None:
        self.most = most

    def check(self, value: object) -> None:
        if type(value) is not bytes:
            raise Invalid(f"expected binary (bin), got {type_name(value)}")
        if len(value) > self.most:
            raise Invalid(f"expected at most {self.most} bytes, got {len(value)}")

    def describe(self) -> dict[str, Any]:
        return {"type": "bin", "max_length": self.most}

    def notation(self) -> str:
        return f"bin, at most {self.most} bytes"


class KnownCard(WireType):
    """A card whose identity is given: ``["red", "soldier"]`` on the wire, a `Card` in Python."""

    name = "card"

    def load(self, value: object) -> Any:
        if type(value) is not list or len(value) != 2:
            raise Invalid(f"expected a card [family, kind], got {type_name(value)}")
        try:
            card = card_from_data(value)
        except ValueError as e:
            raise Invalid(f"expected a card [family, kind]: {e}") from None
        if card.kind is None:
            raise Invalid("expected a card with its kind, not a card back")
        return card

    def check(self, value: object) -> None:
        if not isinstance(value, Card) or value.kind is None:
            raise Invalid(f"expected a Card with a kind, got {shown(value)}")

    def dump(self, value: Any) -> object:
        return card_to_data(value)

    def notation(self) -> str:
        return "card `[family, kind]`"


class PlaceAt(WireType):
    """Where a card is placed: ``"first"``, ``"last"``, or the pid of a card to cover."""

    name = "at"

    def __init__(self) -> None:
        self._pid = UInt()

    def check(self, value: object) -> None:
        if value == "first" or value == "last":
            return
        if type(value) is not int:
            raise Invalid(f'expected "first", "last" or a pid, got {type_name(value)}')
        self._pid.check(value)

    def describe(self) -> dict[str, Any]:
        return {"type": "at", "values": ["first", "last"], "or": self._pid.describe()}

    def notation(self) -> str:
        return f'`"first"` \\| `"last"` \\| pid ({self._pid.notation()})'


class PlainMap(WireType):
    """A map with string keys, passed through as plain data (engine views,
    events and actions). With `typed`, it must also have a string ``type``.
    Its contents are as safe as the codec makes every decoded value: no
    float, no ext, bounded depth."""

    name = "map"

    def __init__(self, what: str, typed: bool = False) -> None:
        self.what = what
        self.typed = typed

    def check(self, value: object) -> None:
        if type(value) is not dict:
            raise Invalid(f"expected a map ({self.what}), got {type_name(value)}")
        for key in value:
            if type(key) is not str:
                raise Invalid("map keys must be strings")
        if self.typed and type(value.get("type")) is not str:
            raise Invalid(f"{self.what} needs a string 'type'")

    def describe(self) -> dict[str, Any]:
        return {"type": "map", "of": self.what}

    def notation(self) -> str:
        return f"map: {self.what}"


class ListOf(WireType):
    """An array of ``lo..hi`` items of one type; a tuple in Python."""

    name = "list"

    def __init__(self, item: WireType, lo: int = 0, hi: int = 64) -> None:
        self.item = item
        self.lo = lo
        self.hi = hi

    def _length(self, value: list[Any] | tuple[Any, ...]) -> None:
        if not self.lo <= len(value) <= self.hi:
            raise Invalid(f"expected {self.lo}..{self.hi} items, got {len(value)}")

    def load(self, value: object) -> Any:
        if type(value) is not list:
            raise Invalid(f"expected an array, got {type_name(value)}")
        self._length(value)
        load = self.item.load
        out = []
        for i, item in enumerate(value):
            try:
                out.append(load(item))
            except Invalid as e:
                raise e.within(f"[{i}]") from None
        return tuple(out)

    def check(self, value: object) -> None:
        if type(value) is not tuple:
            raise Invalid(f"expected a tuple, got {type(value).__name__}")
        self._length(value)
        for i, item in enumerate(value):
            try:
                self.item.check(item)
            except Invalid as e:
                raise e.within(f"[{i}]") from None

    def dump(self, value: Any) -> object:
        dump = self.item.dump
        return [dump(item) for item in value]

    def describe(self) -> dict[str, Any]:
        return {
            "type": "list",
            "min_items": self.lo,
            "max_items": self.hi,
            "items": self.item.describe(),
        }

    def notation(self) -> str:
        return f"array of {self.lo}..{self.hi} × {self.item.notation()}"


class PassedList(ListOf):
    """A list of plain maps kept as a list (no copy): views' events and actions
    are forwarded as they are, so only their shape is checked."""

    def load(self, value: object) -> Any:
        if type(value) is not list:
            raise Invalid(f"expected an array, got {type_name(value)}")
        self._length(value)
        check = self.item.check
        for i, item in enumerate(value):
            try:
                check(item)
            except Invalid as e:
                raise e.within(f"[{i}]") from None
        return value

    def check(self, value: object) -> None:
        if type(value) is not list:
            raise Invalid(f"expected a list, got {type(value).__name__}")
        self._length(value)
        for i, item in enumerate(value):
            try:
                self.item.check(item)
            except Invalid as e:
                raise e.within(f"[{i}]") from None

    def dump(self, value: Any) -> object:
        return value


def family_type() -> OneOf:
    return OneOf(*FAMILY_NAMES)


# ------------------------------------------------------------------ declarations


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field: its wire name, wire type, meaning, and whether it must be present."""

    name: str
    wire_type: WireType
    doc: str
    required: bool


@dataclasses.dataclass(frozen=True, slots=True)
class StructSpec:
    """A nested structure as the catalog describes it: name, meaning, fields."""

    name: str
    doc: str
    fields: tuple[FieldSpec, ...]


@overload
def wire(wire_type: WireType, doc: str, *, secret: bool = False) -> Any: ...
@overload
def wire(wire_type: WireType, doc: str, *, default: None, secret: bool = False) -> Any: ...
def wire(
    wire_type: WireType, doc: str, *, default: Any = dataclasses.MISSING, secret: bool = False
) -> Any:
    """Declare a field: required, or optional with ``default=None``. A
    `secret` field (a session token) is left out of the value's repr, so no
    log line that shows a message shows it."""
    if default is not dataclasses.MISSING and default is not None:
        raise ValueError("an optional field's default is None (absent)")
    return dataclasses.field(default=default, repr=not secret, metadata={"wire": (wire_type, doc)})


# Whether `WireValue.trusted` checks what it makes. Off in a server: what
# the server makes from its own state is made right by code the tests run
# with it on (tests/conftest.py), where a value it makes wrong fails.
CHECK_TRUSTED = False


class WireValue:
    """Base of messages and structs: checks its fields when constructed (but
    through `trusted`)."""

    __slots__ = ()
    WIRE_NAME: ClassVar[str]
    FIELDS: ClassVar[tuple[FieldSpec, ...]]

    @classmethod
    def trusted(cls: type[W], **fields: Any) -> W:
        """The value of `fields`, made by our own code from values it holds
        (a push of the server's, from its game): not checked again on the
        hot path, unless `CHECK_TRUSTED` (the tests). Absent optional
        fields are None; an unknown one raises `TypeError`, as ever.

        >>> from oriflamme.protocol import messages as m
        >>> m.Ok.trusted(id=3) == m.Ok(id=3)
        True
        """
        if CHECK_TRUSTED:
            return cls(**fields)
        value = object.__new__(cls)
        for spec in cls.FIELDS:
            object.__setattr__(value, spec.name, fields.pop(spec.name, None))
        if fields:
            raise TypeError(f"{cls.__name__} has no field {next(iter(fields))!r}")
        return value

    def __post_init__(self) -> None:
        try:
            for spec in self.FIELDS:
                value = getattr(self, spec.name)
                if value is None:
                    if spec.required:
                        raise Invalid("required field is missing", spec.name)
                    continue
                try:
                    spec.wire_type.check(value)
                except Invalid as e:
                    raise e.within(spec.name) from None
            self.validate()
        except Invalid as e:
            raise LocalProtocolError(INVALID_FIELD, f"{self.WIRE_NAME}.{e}") from None

    def validate(self) -> None:
        """Checks across fields; raise `Invalid`. Runs after the fields' own checks."""

    @classmethod
    def spec(cls) -> StructSpec:
        return StructSpec(cls.WIRE_NAME, " ".join((cls.__doc__ or "").split()), cls.FIELDS)


W = TypeVar("W", bound=WireValue)


def _collect(cls: type[WireValue]) -> tuple[FieldSpec, ...]:
    specs = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        wire_type, doc = f.metadata["wire"]
        specs.append(FieldSpec(f.name, wire_type, doc, f.default is dataclasses.MISSING))
    return tuple(specs)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(wire,))
def wire_struct(name: str) -> Callable[[type[W]], type[W]]:
    """Make a nested wire structure (a map inside a message) named `name`."""

    def make(cls: type[W]) -> type[W]:
        made = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)
        made.WIRE_NAME = name
        made.FIELDS = _collect(made)
        return made

    return make


class StructOf(WireType):
    """A nested map described by a `wire_struct` class; the dataclass in Python."""

    name = "struct"

    def __init__(self, cls: type[WireValue]) -> None:
        self.cls = cls
        self.spec = cls.spec()

    def load(self, value: object) -> Any:
        if type(value) is not dict:
            raise Invalid(f"expected a map ({self.cls.WIRE_NAME}), got {type_name(value)}")
        return load_fields(self.cls, value)

    def check(self, value: object) -> None:
        if type(value) is not self.cls:
            raise Invalid(f"expected {self.cls.__name__}, got {type(value).__name__}")

    def dump(self, value: Any) -> object:
        return dump_fields(value)

    def describe(self) -> dict[str, Any]:
        return {"type": "struct", "structure": self.spec.name}

    def notation(self) -> str:
        return f"[{self.spec.name}](#structure-{self.spec.name})"


class ValueStruct(StructOf):
    """A nested map loaded into a plain frozen value class of another layer
    (`commitments.Opening`, `record.SeatVerdict`), so that one concept keeps
    one Python type on and off the wire. `fields` name the class's
    attributes; the class is built with them as keyword arguments."""

    def __init__(self, cls: type[Any], name: str, doc: str, fields: tuple[FieldSpec, ...]) -> None:
        self.cls = cls
        self.spec = StructSpec(name, doc, fields)

    def load(self, value: object) -> Any:
        if type(value) is not dict:
            raise Invalid(f"expected a map ({self.spec.name}), got {type_name(value)}")
        return self.cls(**dict(_loaded(self.spec.fields, value)))

    def check(self, value: object) -> None:
        if type(value) is not self.cls:
            raise Invalid(f"expected {self.cls.__name__}, got {type(value).__name__}")
        for spec in self.spec.fields:
            item = getattr(value, spec.name)
            if item is None:
                if spec.required:
                    raise Invalid("required field is missing", spec.name)
                continue
            try:
                spec.wire_type.check(item)
            except Invalid as e:
                raise e.within(spec.name) from None

    def dump(self, value: Any) -> object:
        out: dict[str, Any] = {}
        for spec in self.spec.fields:
            item = getattr(value, spec.name)
            if item is not None:
                out[spec.name] = spec.wire_type.dump(item)
        return out


def load_fields(cls: type[W], data: dict[Any, Any]) -> W:
    """Build `cls` from a decoded map: every declared field checked and
    converted, unknown keys ignored. Raises `Invalid` with the field's path."""
    obj = object.__new__(cls)
    # The values are checked here, so the dataclass __init__ (which would
    # check them again) is bypassed; frozen dataclasses set fields this way too.
    setter = object.__setattr__
    for name, value in _loaded(cls.FIELDS, data):
        setter(obj, name, value)
    obj.validate()
    return obj


def _loaded(specs: tuple[FieldSpec, ...], data: dict[Any, Any]) -> Iterator[tuple[str, Any]]:
    """Each declared field of a decoded map, checked and converted (None:
    absent); raises `Invalid` with the field's path."""
    for spec in specs:
        value = data.get(spec.name)
        if value is None:
            if spec.required:
                raise Invalid("required field is missing", spec.name)
        else:
            try:
                value = spec.wire_type.load(value)
            except Invalid as e:
                raise e.within(spec.name) from None
        yield spec.name, value


def dump_fields(obj: WireValue) -> dict[str, Any]:
    """Plain data for a message or struct; None (absent) fields are left out."""
    out: dict[str, Any] = {}
    for spec in obj.FIELDS:
        value = getattr(obj, spec.name)
        if value is not None:
            out[spec.name] = spec.wire_type.dump(value)
    return out
