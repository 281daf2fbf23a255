"""What the FMI 2.0 (fmu.model_description) and FMI 3.0 (fmi3.model_description_3)
modelDescription writers share: the root element, unit definitions, log
categories and the default experiment, and the ModelStructure's lists of
unknowns with their dependencies.
"""
from __future__ import annotations

import datetime
import os

from lxml import etree

from fmigen import __version__
from fmigen.model import ModelError

from fmigen.fmi.variables import Variable


def description_root(fmi_version: str, mech, guid: str, **more) -> etree._Element:
    """The fmiModelDescription element with the attributes both versions
    carry, in their order; the GUID is FMI 2.0's ``guid`` and FMI 3.0's
    ``instantiationToken``; ``more``: the version's own attributes, last."""
    token = {"2.0": "guid", "3.0": "instantiationToken"}[fmi_version]
    stamp = build_time()
    dated = {} if stamp is None else \
        {"generationDateAndTime": datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)
         .strftime("%Y-%m-%dT%H:%M:%SZ")}
    return etree.Element("fmiModelDescription", {
        "fmiVersion": fmi_version, "modelName": mech.name, token: "{" + guid + "}",
        "description": mech.description or mech.name, "generationTool": f"fmigen {__version__}",
        **dated, "variableNamingConvention": "structured", **more})


def build_time() -> int | None:
    """The build's date, as the reproducible-builds convention gives it: the
    environment's ``SOURCE_DATE_EPOCH`` (seconds since 1970, UTC), else none.
    Why not the clock: the same input must give the same FMU bytes, and a
    clock in modelDescription.xml (``generationDateAndTime``, optional in
    FMI 2.0 and 3.0) or in the archive's entries made every build differ."""
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if value is None or value.strip() == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ModelError(f"SOURCE_DATE_EPOCH={value!r} is not an integer number of seconds since 1970 "
                         "(the reproducible-builds convention for a build's date)") from None


def units_categories_experiment(root, units: set, step: float):
    """UnitDefinitions, LogCategories and DefaultExperiment, the same in the
    FMI 2.0 and 3.0 model descriptions."""
    if units:
        ud = etree.SubElement(root, "UnitDefinitions")
        for u in sorted(units):
            etree.SubElement(ud, "Unit", name=u)
    cats = etree.SubElement(root, "LogCategories")
    for name, desc in [("logStatusError", "errors: singular configurations, bad input, wrong calls"),
                       ("logStatusWarning", "warnings"), ("logEvents", "informational messages")]:
        etree.SubElement(cats, "Category", name=name, description=desc)
    etree.SubElement(root, "DefaultExperiment", startTime="0", stopTime="2", stepSize=repr(float(step)))


def structure_lists(vars_: list[Variable], deps, kind: str):
    """(element, dependency table, unknowns) for Outputs, Derivatives and
    InitialUnknowns of the declared variables ``vars_``, with dependencies
    restricted to the knowns that exist in this variant: Co-Simulation
    outputs depend on inputs (and time where it is declared) only, Model
    Exchange unknowns on states and inputs; initial unknowns on exact variables."""
    declared = {v.name for v in vars_}
    inputs = {v.name for v in vars_ if v.causality == "input"}
    states = {v.derivative for v in vars_ if v.derivative}
    exact = {v.name for v in vars_ if v.initial == "exact" or v.causality == "input"}
    runtime_known = inputs | ({"time"} if "time" in declared else set())
    if kind == "me":
        runtime_known |= states
    rt = {n: [d for d in deps.runtime[n] if d in runtime_known] for n in deps.runtime}
    init = {n: [d for d in deps.initial[n] if d in exact] for n in deps.initial}
    # a state's own value as a derivative (der(theta) of theta) depends on itself
    for v in vars_:
        if v.derivative and v.name in states:
            rt[v.name] = [v.name]
    outputs = [v.name for v in vars_ if v.causality == "output"]
    derivatives = [v.name for v in vars_ if v.derivative]
    initial = [v.name for v in vars_
               if (v.causality == "output" and v.initial in ("calculated", "approx"))
               or (v.derivative and v.initial in ("calculated", "approx"))]
    out = [("Outputs", rt, outputs)]
    if kind == "me":
        out.append(("Derivatives", rt, derivatives))
    out.append(("InitialUnknowns", init, initial))
    return out
