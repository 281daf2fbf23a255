"""FMI 3.0 modelDescription.xml (Co-Simulation or Model Exchange).

Same variables and value references as the FMI 2.0 FMU (runtime/fmigen_instance.h),
as ``<Float64>`` elements, plus the independent variable ``time``.  The
ModelStructure refers to value references.
"""

from __future__ import annotations

import datetime

from lxml import etree

from .codegen import GeneratedModel


def time_value_reference(iface, form=None) -> int:
    """VR_TIME of runtime/fmigen_instance.h: after the accelerations (of the
    independent coordinates, or of all with an augmented formulation);
    ``iface`` an fmu.Interface."""
    mech = iface.mechanism
    tunable = [p for p in mech.parameters if p.tunable]
    return 2 * iface.n + 1 + len(mech.inputs) + len(tunable) + 1 + len(iface.outputs) + \
        (iface.f if form is None else iface.n)


def model_description_3(iface, gen: GeneratedModel, identifier: str, vars_, kind: str,
                        step: float, sources: list[str], form=None) -> bytes:
    from .fmu import structure_lists, units_categories_experiment   # shared with the FMI 2 writer
    mech = iface.mechanism
    deps = iface.dependencies
    root = etree.Element("fmiModelDescription", fmiVersion="3.0", modelName=mech.name,
                         instantiationToken="{" + gen.guid + "}",
                         description=mech.description or mech.name,
                         generationTool=f"fmigen {__import__('fmigen').__version__}",
                         generationDateAndTime=datetime.datetime.now(datetime.timezone.utc)
                         .strftime("%Y-%m-%dT%H:%M:%SZ"),
                         variableNamingConvention="structured")
    common = dict(modelIdentifier=identifier, needsExecutionTool="false",
                  canBeInstantiatedOnlyOncePerProcess="false",
                  canGetAndSetFMUState="true", canSerializeFMUState="true",
                  providesDirectionalDerivatives="false", providesAdjointDerivatives="false",
                  providesPerElementDependencies="false")
    if kind == "me":
        # needed: the warm start moves only there (fmu.model_description)
        etree.SubElement(root, "ModelExchange", **common, needsCompletedIntegratorStep="true",
                         providesEvaluateDiscreteStates="false")
    else:
        # fixedInternalStepSize is the start value of the fixed parameter
        # internal_step (settable before initialization); a communication step that is not a multiple of it
        # ends with one shorter internal step (README, FMU conventions).
        etree.SubElement(root, "CoSimulation", **common,
                         canHandleVariableCommunicationStepSize="true",
                         fixedInternalStepSize=repr(float(step)),
                         maxOutputDerivativeOrder="0", recommendedIntermediateInputSmoothness="0",
                         providesIntermediateUpdate="false", mightReturnEarlyFromDoStep="false",
                         canReturnEarlyAfterIntermediateUpdate="false", hasEventMode="false",
                         providesEvaluateDiscreteStates="false")
    # "s" for the time variable FMI 3.0 declares
    units_categories_experiment(root, {v.unit for v in vars_ if v.unit} | {"s"}, step)
    mv = etree.SubElement(root, "ModelVariables")
    vr = {"time": time_value_reference(iface, form)}
    etree.SubElement(mv, "Float64", name="time", valueReference=str(vr["time"]), causality="independent",
                     variability="continuous", unit="s", description="simulation time")
    for v in vars_:
        vr[v.name] = v.vr
    for v in vars_:
        attrs = dict(name=v.name, valueReference=str(v.vr), causality=v.causality, variability=v.variability)
        if v.description:
            attrs["description"] = v.description
        if v.initial:
            attrs["initial"] = v.initial
        if v.unit:
            attrs["unit"] = v.unit
        if v.start is not None:
            attrs["start"] = repr(float(v.start))
        if v.derivative:
            attrs["derivative"] = str(vr[v.derivative])
        etree.SubElement(mv, "Float64", **attrs)
    ms = etree.SubElement(root, "ModelStructure")
    tags = {"Outputs": "Output", "Derivatives": "ContinuousStateDerivative", "InitialUnknowns": "InitialUnknown"}
    for group_tag, table, names in structure_lists(vars_, deps, kind, set(vr)):
        for name in names:
            etree.SubElement(ms, tags[group_tag], valueReference=str(vr[name]),
                             dependencies=" ".join(str(vr[d]) for d in table[name]))
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")
