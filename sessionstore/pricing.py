"""What a model's tokens cost: the dated price table shipped with the package, and a user's own.

Prices change; a report must say which prices it used. The shipped table (`prices.json`, package
data) carries its date and source; a user's own table — a JSON file of the same shape, given as
``prices=`` or named by ``$SESSIONSTORE_PRICES`` — is laid over it model by model (its models
replace or add to the shipped ones), so that one negotiated rate needs one entry.

A model is found by its exact name, else by that name without what providers add around the
same model: a ``provider/`` prefix, a release date (``-20250929``, ``-2025-08-07``), a Bedrock
version (``-v1:0``). Nothing fuzzier: a model with no price is reported as such (counted at no
cost), never priced as a look-alike.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

from .errors import ConfigurationError

PRICES_ENV: Final = "SESSIONSTORE_PRICES"
# Anthropic and Google charge a request's every token at the long-context rate once its input is
# over this many tokens (where the model has such a rate).
LONG_CONTEXT: Final = 200_000
_PER: Final = 1_000_000
_FIELDS: Final = ("input", "output", "cache_write", "cache_read")
_SUFFIXES: Final = (re.compile(r"-v\d+(:\d+)?$"), re.compile(r"[-@]\d{8}$"), re.compile(r"-\d{4}-\d{2}-\d{2}$"))


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens of each kind; cache writes and reads are priced apart."""

    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True, slots=True)
class Price:
    rates: Rates
    long_context: Rates | None = None  # above `LONG_CONTEXT` input tokens, where the model has such a rate
    fast: float = 1.0  # every rate's multiplier in fast mode (Claude Code's ``usage.speed == "fast"``)

    def cost(self, input_tokens: int, output_tokens: int, cache_write: int, cache_read: int, *,
             fast: bool = False) -> float:
        """USD for one request's tokens."""
        long = self.long_context is not None and input_tokens + cache_write + cache_read > LONG_CONTEXT
        r = self.long_context if long and self.long_context is not None else self.rates
        return (input_tokens * r.input + output_tokens * r.output + cache_write * r.cache_write
                + cache_read * r.cache_read) / _PER * (self.fast if fast else 1.0)


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices per model, with the date they were taken and where from."""

    models: Mapping[str, Price]
    date: str
    source: str

    def price(self, model: str | None) -> Price | None:
        """The price of `model` (see the module docstring for how names are matched); None if unknown."""
        if not model:
            return None
        for name in _candidates(model):
            found = self.models.get(name)
            if found is not None:
                return found
        return None

    def over(self, base: PriceTable) -> PriceTable:
        """This table laid over `base`: its models replace or add to base's."""
        return PriceTable({**base.models, **self.models}, self.date, f"{self.source}, over {base.source} of {base.date}")


def _candidates(model: str) -> list[str]:
    names = [model, model.lower()]
    bare = model.lower().rsplit("/", 1)[-1]
    names.append(bare)
    for suffix in _SUFFIXES:
        bare = suffix.sub("", bare)
        names.append(bare)
    return list(dict.fromkeys(names))


def parse_table(data: Any, origin: str) -> PriceTable:
    """A price table from its JSON form (`prices.json`'s shape); `ConfigurationError` naming
    `origin` and the entry at fault when it is not one."""
    if not isinstance(data, Mapping) or not isinstance(data.get("models"), Mapping):
        raise ConfigurationError(f"{origin}: a price table is a JSON object with \"models\": {{name: prices}}")
    models = {}
    for name, entry in data["models"].items():
        try:
            long, fast = entry.get("above_200k"), entry.get("fast", 1)
            if isinstance(fast, bool) or not isinstance(fast, (int, float)) or fast <= 0:
                raise ValueError(fast)
            models[str(name).lower()] = Price(_rates(entry), _rates(long) if long is not None else None, float(fast))
        except (AttributeError, TypeError, ValueError, KeyError):
            raise ConfigurationError(f"{origin}: model {name!r} needs numbers (USD per million tokens) for "
                                     f"{', '.join(_FIELDS)}") from None
    return PriceTable(models, str(data.get("date", "undated")), str(data.get("source", origin)))


def _rates(entry: Mapping[str, Any]) -> Rates:
    values = [entry.get(field, 0 if field == "cache_write" else None) for field in _FIELDS]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in values):
        raise ValueError(entry)
    return Rates(*(float(v) for v in values))


@cache
def shipped() -> PriceTable:
    """The table shipped with the package."""
    text = resources.files("sessionstore").joinpath("prices.json").read_text(encoding="utf-8")
    return parse_table(json.loads(text), "sessionstore/prices.json")


def load_table(path: str | os.PathLike[str]) -> PriceTable:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the price table {str(path)!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigurationError(f"the price table {str(path)!r} is not JSON: {exc}") from None
    return parse_table(data, str(path))


def price_table(prices: PriceTable | str | os.PathLike[str] | Mapping[str, Any] | None = None) -> PriceTable:
    """The prices a report uses: `prices` (a table, a JSON file's path, or its parsed JSON), else the
    file `$SESSIONSTORE_PRICES` names, laid over the shipped table; the shipped table alone without either."""
    if isinstance(prices, PriceTable):
        return prices
    if prices is None:
        named = os.environ.get(PRICES_ENV, "").strip()
        if not named:
            return shipped()
        prices = named
    if not isinstance(prices, (str, os.PathLike, Mapping)):
        raise ConfigurationError(f"prices are a PriceTable, a JSON file's path or its JSON object, not "
                                 f"{type(prices).__name__}")
    own = parse_table(prices, "prices") if isinstance(prices, Mapping) else load_table(prices)
    return own.over(shipped())


__all__ = ["LONG_CONTEXT", "PRICES_ENV", "Price", "PriceTable", "Rates", "load_table", "parse_table", "price_table",
           "shipped"]
