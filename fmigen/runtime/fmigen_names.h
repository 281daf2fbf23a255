/* Model-prefixed names of the runtime's and the generated model's external symbols.
 *
 * A binary FMU exports only the FMI API (-fvisibility=hidden).  A *source*
 * FMU is compiled by the importer, possibly together with other fmigen FMUs
 * into one binary (with FMI2_FUNCTION_PREFIX / FMI3_FUNCTION_PREFIX set per
 * model): then every external symbol that is not FMI API must differ per
 * model, or the linker reports duplicates (or, with a dynamic loader and
 * RTLD_GLOBAL, one model silently runs another's code).  Each name below
 * becomes <MODEL_IDENTIFIER>_<name>.  tests/test_fmu_isolation.py links two
 * models' sources into one library, so a name missing here fails there.
 */
#ifndef FMIGEN_NAMES_H
#define FMIGEN_NAMES_H

#define FMIGEN_PASTE_(a, b) a##_##b
#define FMIGEN_PASTE(a, b) FMIGEN_PASTE_(a, b)
#define FMIGEN_NAME(name) FMIGEN_PASTE(MODEL_IDENTIFIER, name)
/* What model.c (and fmigen_numeric.h, below) define.  A binary FMU for x86-64 Linux
 * also holds both compiled a second time for processors with AVX
 * (fmigen_model_avx.c, which defines FMIGEN_MODEL_VARIANT): those copies end
 * in _avx, and the runtime calls them through FMIGEN_MODEL_FN where the
 * processor has AVX. */
#ifdef FMIGEN_MODEL_VARIANT
#define FMIGEN_MODEL_NAME(name) FMIGEN_PASTE(FMIGEN_NAME(name), avx)
#else
#define FMIGEN_MODEL_NAME(name) FMIGEN_NAME(name)
#endif
/* The FMI glue's names and the core's and the build's that it calls
 * (fmigen_core_head.h, fmigen_instance.h).  A binary build compiles the glue
 * once for every model (FMIGEN_SHARED_GLUE, defined for every unit): then
 * these carry no prefix in any unit, and the glue reads no model's header. */
#if defined(MODEL_IDENTIFIER) && !defined(FMIGEN_SHARED_GLUE)
#define fg_allowed FMIGEN_NAME(fg_allowed)
#define fg_category_names FMIGEN_NAME(fg_category_names)
#define fg_completed_integrator_step FMIGEN_NAME(fg_completed_integrator_step)
#define fg_core_accept FMIGEN_NAME(fg_core_accept)
#define fg_core_assemble_trial FMIGEN_NAME(fg_core_assemble_trial)
#define fg_core_derivatives FMIGEN_NAME(fg_core_derivatives)
#define fg_core_event_indicators FMIGEN_NAME(fg_core_event_indicators)
#define fg_core_get_states FMIGEN_NAME(fg_core_get_states)
#define fg_core_independent FMIGEN_NAME(fg_core_independent)
#define fg_core_invalid FMIGEN_NAME(fg_core_invalid)
#define fg_core_mass_check FMIGEN_NAME(fg_core_mass_check)
#define fg_core_set_states FMIGEN_NAME(fg_core_set_states)
#define fg_deserialize FMIGEN_NAME(fg_deserialize)
#define fg_do_step FMIGEN_NAME(fg_do_step)
#define fg_enter_continuous_time_mode FMIGEN_NAME(fg_enter_continuous_time_mode)
#define fg_enter_event_mode FMIGEN_NAME(fg_enter_event_mode)
#define fg_enter_initialization FMIGEN_NAME(fg_enter_initialization)
#define fg_exit_initialization FMIGEN_NAME(fg_exit_initialization)
#define fg_fail FMIGEN_NAME(fg_fail)
#define fg_free FMIGEN_NAME(fg_free)
#define fg_free_state FMIGEN_NAME(fg_free_state)
#define fg_get_derivatives FMIGEN_NAME(fg_get_derivatives)
#define fg_get_event_indicators FMIGEN_NAME(fg_get_event_indicators)
#define fg_get_nominals FMIGEN_NAME(fg_get_nominals)
#define fg_get_real FMIGEN_NAME(fg_get_real)
#define fg_get_state FMIGEN_NAME(fg_get_state)
#define fg_get_states FMIGEN_NAME(fg_get_states)
#define fg_log FMIGEN_NAME(fg_log)
#define fg_model FMIGEN_NAME(fg_model)
#define fg_new FMIGEN_NAME(fg_new)
#define fg_no_variables FMIGEN_NAME(fg_no_variables)
#define fg_report FMIGEN_NAME(fg_report)
#define fg_reset FMIGEN_NAME(fg_reset)
#define fg_serialize FMIGEN_NAME(fg_serialize)
#define fg_serialized_size FMIGEN_NAME(fg_serialized_size)
#define fg_set_debug_logging FMIGEN_NAME(fg_set_debug_logging)
#define fg_set_input_derivatives FMIGEN_NAME(fg_set_input_derivatives)
#define fg_set_real FMIGEN_NAME(fg_set_real)
#define fg_set_state FMIGEN_NAME(fg_set_state)
#define fg_set_states FMIGEN_NAME(fg_set_states)
#define fg_set_time FMIGEN_NAME(fg_set_time)
#define fg_terminate FMIGEN_NAME(fg_terminate)
#define fg_update_discrete_states FMIGEN_NAME(fg_update_discrete_states)
#define fmigen_core_assemble FMIGEN_NAME(fmigen_core_assemble)
#define fmigen_core_trim FMIGEN_NAME(fmigen_core_trim)
#define fmigen_core_init FMIGEN_NAME(fmigen_core_init)
#define fmigen_core_message FMIGEN_NAME(fmigen_core_message)
#define fmigen_core_observe FMIGEN_NAME(fmigen_core_observe)
#define fmigen_core_observe_some FMIGEN_NAME(fmigen_core_observe_some)
#define fmigen_core_step FMIGEN_NAME(fmigen_core_step)
#define fmigen_default_solver FMIGEN_NAME(fmigen_default_solver)
#define fmigen_default_step FMIGEN_NAME(fmigen_default_step)
#define fmigen_model_guid FMIGEN_NAME(fmigen_model_guid)
#endif /* the glue's names */

#ifdef MODEL_IDENTIFIER
/* model_start.c's arrays: defined once (not per model.c copy), read by both */
#define fmigen_q_start FMIGEN_NAME(fmigen_q_start)
#define fmigen_sol_start FMIGEN_NAME(fmigen_sol_start)
#define fmigen_augmented_accel FMIGEN_MODEL_NAME(fmigen_augmented_accel)
#define fmigen_augmented_rhs FMIGEN_NAME(fmigen_augmented_rhs)
#define fmigen_base_accept FMIGEN_NAME(fmigen_base_accept)
#define fmigen_coordinate_names FMIGEN_MODEL_NAME(fmigen_coordinate_names)
#define fmigen_core_inputs FMIGEN_NAME(fmigen_core_inputs)
#define fmigen_core_refresh FMIGEN_NAME(fmigen_core_refresh)
#define fmigen_core_rhs FMIGEN_NAME(fmigen_core_rhs)
#define fmigen_core_rhs_accept FMIGEN_NAME(fmigen_core_rhs_accept)
#define fmigen_core_limit FMIGEN_NAME(fmigen_core_limit)
#define fmigen_dependent FMIGEN_MODEL_NAME(fmigen_dependent)
#define fmigen_embedded_prepare FMIGEN_MODEL_NAME(fmigen_embedded_prepare)
#define fmigen_embedded_finish FMIGEN_MODEL_NAME(fmigen_embedded_finish)
#define fmigen_embedded_velocities FMIGEN_MODEL_NAME(fmigen_embedded_velocities)
#define fmigen_event_times FMIGEN_MODEL_NAME(fmigen_event_times)
#define fmigen_formulation_init FMIGEN_NAME(fmigen_formulation_init)
#define fmigen_formulation_message FMIGEN_NAME(fmigen_formulation_message)
#define fmigen_independent FMIGEN_MODEL_NAME(fmigen_independent)
#define fmigen_kinematic_angles FMIGEN_MODEL_NAME(fmigen_kinematic_angles)
#define fmigen_angle_turns FMIGEN_MODEL_NAME(fmigen_angle_turns)
#define fmigen_kinematics FMIGEN_MODEL_NAME(fmigen_kinematics)
#define fmigen_kinematics_failure FMIGEN_MODEL_NAME(fmigen_kinematics_failure)
#define fmigen_mass_check FMIGEN_MODEL_NAME(fmigen_mass_check)
#define fmigen_mass_check_labels FMIGEN_MODEL_NAME(fmigen_mass_check_labels)
#define fmigen_outputs FMIGEN_MODEL_NAME(fmigen_outputs)
#define fmigen_outputs_trig FMIGEN_MODEL_NAME(fmigen_outputs_trig)
#define fmigen_event_indicators FMIGEN_MODEL_NAME(fmigen_event_indicators)
#define fmigen_p_default FMIGEN_MODEL_NAME(fmigen_p_default)
#define fmigen_hard_index FMIGEN_MODEL_NAME(fmigen_hard_index)
#define fmigen_hard_lower FMIGEN_MODEL_NAME(fmigen_hard_lower)
#define fmigen_hard_upper FMIGEN_MODEL_NAME(fmigen_hard_upper)
#define fmigen_partitions FMIGEN_MODEL_NAME(fmigen_partitions)
#define fmigen_phi FMIGEN_MODEL_NAME(fmigen_phi)
#define fmigen_phi_trig FMIGEN_MODEL_NAME(fmigen_phi_trig)
#define fmigen_psd3_minors FMIGEN_MODEL_NAME(fmigen_psd3_minors)
#define fmigen_residual_trig FMIGEN_MODEL_NAME(fmigen_residual_trig)
#define fmigen_sol_layout FMIGEN_MODEL_NAME(fmigen_sol_layout)
#define fmigen_u_default FMIGEN_MODEL_NAME(fmigen_u_default)
#define fmigen_unit_scale FMIGEN_MODEL_NAME(fmigen_unit_scale)
#define fmigen_prescribed_coordinate FMIGEN_MODEL_NAME(fmigen_prescribed_coordinate)
#define fmigen_prescribed_input FMIGEN_MODEL_NAME(fmigen_prescribed_input)
#define fmigen_prescribed_drive FMIGEN_MODEL_NAME(fmigen_prescribed_drive)
#define fmigen_prescribed_omega FMIGEN_MODEL_NAME(fmigen_prescribed_omega)
#define fmigen_rest_forces FMIGEN_MODEL_NAME(fmigen_rest_forces)
#define fmigen_trim_coordinate FMIGEN_MODEL_NAME(fmigen_trim_coordinate)
#define fmigen_trim_input FMIGEN_MODEL_NAME(fmigen_trim_input)
#define fmigen_v_start FMIGEN_MODEL_NAME(fmigen_v_start)
#endif /* MODEL_IDENTIFIER */

/* The numerical kernels (fmigen_numeric.h: LU, atan2, sin/cos, polynomial
 * roots) are the same code for every model.  In a source FMU they carry the
 * model's prefix like everything else (fmigen_core.c and the AVX copy of
 * model.c include them).  A binary build, whose symbols are hidden
 * (-fvisibility=hidden), compiles them instead in a unit of their own
 * (fmigen_kernels.c) with FMIGEN_SHARED_KERNELS defined for every unit: then
 * no name of theirs depends on the model, no model's header enters that
 * unit, and the object cache keeps one compiled copy per compiler and flags
 * for every model.  Their AVX copies end in _avx either way. */
#if defined(FMIGEN_SHARED_KERNELS)
#ifdef FMIGEN_MODEL_VARIANT
#define FMIGEN_KERNEL_NAME(name) FMIGEN_PASTE(name, avx)
#endif
#elif defined(MODEL_IDENTIFIER)
#define FMIGEN_KERNEL_NAME(name) FMIGEN_MODEL_NAME(name)
#endif
#ifdef FMIGEN_KERNEL_NAME
#define fmigen_atan2 FMIGEN_KERNEL_NAME(fmigen_atan2)
#define fmigen_atan_64ths FMIGEN_KERNEL_NAME(fmigen_atan_64ths)
#define fmigen_atan_64ths_lo FMIGEN_KERNEL_NAME(fmigen_atan_64ths_lo)
#define fmigen_lu_factor FMIGEN_KERNEL_NAME(fmigen_lu_factor)
#define fmigen_lu_solve FMIGEN_KERNEL_NAME(fmigen_lu_solve)
#define fmigen_poly_root FMIGEN_KERNEL_NAME(fmigen_poly_root)
#define fmigen_poly_table FMIGEN_KERNEL_NAME(fmigen_poly_table)
#define fmigen_sincos FMIGEN_KERNEL_NAME(fmigen_sincos)
#define fmigen_sincos_call FMIGEN_KERNEL_NAME(fmigen_sincos_call)
#define fmigen_sin FMIGEN_KERNEL_NAME(fmigen_sin)
#define fmigen_cos FMIGEN_KERNEL_NAME(fmigen_cos)
#define fmigen_asin FMIGEN_KERNEL_NAME(fmigen_asin)
#define fmigen_acos FMIGEN_KERNEL_NAME(fmigen_acos)
#define fmigen_atan FMIGEN_KERNEL_NAME(fmigen_atan)
#define fmigen_tan FMIGEN_KERNEL_NAME(fmigen_tan)
#define fmigen_exp FMIGEN_KERNEL_NAME(fmigen_exp)
#define fmigen_log FMIGEN_KERNEL_NAME(fmigen_log)
#endif /* FMIGEN_KERNEL_NAME */
#endif
