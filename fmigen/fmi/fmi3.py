"""FMI 3.0 modelDescription.xml (Co-Simulation or Model Exchange).

The variables of the table (fmigen/fmi/variables.py) that FMI 3 declares: those
of the FMI 2.0 FMU, as ``<Float64>`` elements, plus the independent variable
``time``.  The ModelStructure refers to value references.
"""

from __future__ import annotations


from lxml import etree

from fmigen.fmi.description import description_root, structure_lists, units_categories_experiment
from fmigen.fmi.variables import VariableTable
from fmigen.generate.codegen import GeneratedModel


def model_description_3(iface, gen: GeneratedModel, table: VariableTable, kind: str, step: float) -> bytes:
    """``iface``: an fmu.Interface (the mechanism and the ModelStructure dependencies)."""
    mech = iface.mechanism
    deps = iface.dependencies
    vars_ = table.declared("3")
    root = description_root("3.0", mech, gen.guid)
    common = dict(modelIdentifier=gen.identifier, needsExecutionTool="false",
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
    units_categories_experiment(root, {v.unit for v in vars_ if v.unit}, step)
    mv = etree.SubElement(root, "ModelVariables")
    vr = {v.name: v.vr for v in vars_}
    # the independent variable first, as a reader looks for it; the others in value-reference order
    for v in sorted(vars_, key=lambda v: v.causality != "independent"):
        attrs = dict(name=v.name, valueReference=str(v.vr), causality=v.causality, variability=v.variability)
        if v.description:
            attrs["description"] = v.description
        if v.initial:
            attrs["initial"] = v.initial
        if v.unit:
            attrs["unit"] = v.unit
        if v.start is not None:
            attrs["start"] = repr(float(v.start))
        if v.minimum is not None:
            attrs["min"] = repr(float(v.minimum))
        if v.maximum is not None:
            attrs["max"] = repr(float(v.maximum))
        if v.derivative:
            attrs["derivative"] = str(vr[v.derivative])
        etree.SubElement(mv, "Float64", **attrs)
    ms = etree.SubElement(root, "ModelStructure")
    tags = {"Outputs": "Output", "Derivatives": "ContinuousStateDerivative", "InitialUnknowns": "InitialUnknown"}
    for group_tag, group, names in structure_lists(vars_, deps, kind):
        for name in names:
            etree.SubElement(ms, tags[group_tag], valueReference=str(vr[name]),
                             dependencies=" ".join(str(vr[d]) for d in group[name]))
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")
