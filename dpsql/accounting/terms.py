"""The loss terms of a ledger entry, read back from the JSON it recorded (no engine, no numpy).

An entry without readable terms (written before they were recorded), or whose terms do not add
up exactly to the entry's charged (epsilon, delta), enters as one (epsilon, delta) term of its
charged cost: the entry's own claim, never less.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from dpsql.accounting.cost import LOSS_FAMILIES, PrivacyCost, PrivacyLoss


def zcdp_rho_of(loss: PrivacyLoss) -> Fraction:
    """The rho a term's own record claims (for checking a zcdp term's parts)."""
    if loss.family == "zcdp" and loss.rho is not None:
        return loss.rho
    if loss.family == "discrete_gaussian" and loss.sigma2 and loss.sensitivity is not None:
        return loss.sensitivity ** 2 / (2 * loss.sigma2)
    if loss.family == "bounded_range":
        return loss.epsilon ** 2 / 8
    return loss.epsilon ** 2 / 2


def losses_of(params: Mapping[str, object], cost: PrivacyCost) -> tuple[PrivacyLoss, ...]:
    """The loss terms of one ledger entry, read back from its ``params["losses"]``.

    An entry without readable terms (written before they were recorded), or whose terms do not
    add up exactly to the entry's charged (epsilon, delta), enters as one (epsilon, delta) term
    of its charged cost: the entry's own claim, never less.
    """
    whole = (PrivacyLoss("approx_dp", "ledger", cost.epsilon, cost.delta),) if cost.epsilon or cost.delta else ()
    records = params.get("losses")
    if not isinstance(records, list):
        return whole
    try:
        losses = tuple(_loss(record) for record in records)
    except (TypeError, ValueError, KeyError, ZeroDivisionError):
        return whole
    if sum((loss.epsilon for loss in losses), Fraction(0)) != cost.epsilon or \
            sum((loss.delta for loss in losses), Fraction(0)) != cost.delta:
        return whole
    return losses


def _loss(record: Any) -> PrivacyLoss:
    if not isinstance(record, dict):
        raise TypeError("a loss record is an object")
    family = record["family"]
    if family not in LOSS_FAMILIES:
        raise ValueError("unknown loss family")
    values = {name: Fraction(str(record[name])) for name in ("epsilon", "delta", "sensitivity", "scale", "sigma2", "rho")
              if record.get(name) is not None}
    parts = record.get("parts")
    if parts is not None and (family != "zcdp" or not isinstance(parts, list)):
        raise ValueError("only a zcdp term has parts")
    loss = PrivacyLoss(family, str(record.get("mechanism", "")), values["epsilon"], values.get("delta", Fraction(0)),
                       values.get("sensitivity"), values.get("scale"), values.get("sigma2"), values.get("rho"),
                       tuple(_loss(part) for part in parts or ()))
    if loss.parts and (loss.rho is None or sum((zcdp_rho_of(p) for p in loss.parts), Fraction(0)) > loss.rho):
        raise ValueError("the parts of a zcdp term exceed its rho")
    if loss.epsilon < 0 or not 0 <= loss.delta < 1:
        raise ValueError("invalid loss")
    return loss
