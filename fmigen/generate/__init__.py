"""Code generation: the C of model.c (kinematics walk, embedding, lanes, formulations)."""
