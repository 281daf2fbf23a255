"""FMI: the variable table, ModelStructure, modelDescription (2.0, 3.0), compile and package."""
