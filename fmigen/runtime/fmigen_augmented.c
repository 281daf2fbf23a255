/* fmigen runtime: the augmented formulations (constraint stabilization and
 * virtual springs) and the commit every formulation calls (refresh); the
 * state packing shared by every formulation, fmigen_state_get/_set, is
 * inline in fmigen_runtime.h.
 *
 * model_config.h selects the formulation (codegen/formulation.py):
 *   FMIGEN_FORMULATION 0   embedded ODE (fmigen_core.c), x = [q_i, v_i]
 *                      1   Baumgarte (paper 000 eq. 6), fp = {α, β}
 *                      2   penalty, one iteration (paper 000 eqs. 7-9), fp = {ρ, ω, ζ}
 *                      3   virtual springs/dampers (paper 003), fp = {k, b}
 * The augmented formulations integrate all n coordinates, x = [q, v] (2·NQ),
 * from the same generated M, F, Φ, Φ_q, Φ_t, γ; the dependent coordinates are
 * integrated, not solved, so Φ(q) drifts (reported as constraint_residual).
 * Their parameters live in FmigenCore.fp (defaults FMIGEN_FP_DEFAULT, the
 * values given at build time), so an FMU can declare them as fixed
 * parameters.  The accelerations are generated per model
 * (fmigen_augmented_accel, codegen_embedding.augmented_code):
 *
 *   Baumgarte: M q̈ + Φ_qᵀλ = F, Φ_q q̈ = γ − 2αΦ̇ − β²Φ, through the Schur
 *     complement (Φ_q M⁻¹ Φ_qᵀ) λ = Φ_q M⁻¹ F − (γ − 2αΦ̇ − β²Φ);
 *   penalty (q̈⁽⁰⁾ = M⁻¹F, one iteration):
 *     (M + ρΦ_qᵀΦ_q) q̈ = F − ρΦ_qᵀ(−γ + 2ζωΦ̇ + ω²Φ);
 *   spring: M q̈ = F − Φ_qᵀ(kΦ + bΦ̇), i.e. the potential ½k|Φ|² and the
 *     Rayleigh dissipation ½b|Φ̇|² of paper 003 with Φ in the role of its cut
 *     joint's displacement vector Δ;
 * where Φ̇ = Φ_q v + Φ_t.  Baumgarte and spring need M invertible.
 */
#include <stdio.h>
#include <string.h>
#include "fmigen_runtime.h"

#if FMIGEN_FORMULATION
static const double fp_default[FMIGEN_NFP] = FMIGEN_FP_DEFAULT;
static const char *const form_name[] = {"embedded", "baumgarte", "penalty", "spring"};
#endif

void fmigen_formulation_init(FmigenCore *c)
{
#if FMIGEN_FORMULATION
    memcpy(c->fp, fp_default, sizeof fp_default);
#else
    (void)c;
#endif
}

int fmigen_core_refresh(FmigenCore *c)
{
#if FMIGEN_FORMULATION
    /* by the exponent bits (fmigen_all_finite): isfinite is folded to true
     * under an importer's -ffinite-math-only, and this is the test of a
     * step's integrated state */
    if (!fmigen_all_finite(c->q, NQ) || !fmigen_all_finite(c->v, NQ))
        return fmigen_core_fail(c, FMIGEN_ERR_AUGMENTED_STATE, 0, c->t);
    c->observe_pending = FMIGEN_OBSERVE_ALL;
    return 0;
#else
    return fmigen_core_assemble(c);
#endif
}

/* fmigen_core_message's text of this file's errors (FMIGEN_ERR_AUGMENTED_*:
 * err_code 2 the mass or penalty matrix, 1 the constraint matrix) */
void fmigen_formulation_message(FmigenCore *c)
{
#if FMIGEN_FORMULATION
    const char *what = c->err_code != 2 ? "constraint matrix Φ_q M⁻¹ Φ_qᵀ (redundant or dependent constraints)"
                       : FMIGEN_FORMULATION == 2 ? "penalty matrix M + ρΦ_qᵀΦ_q" : "mass matrix M";
    if (c->err_kind == FMIGEN_ERR_AUGMENTED_STATE)
        snprintf(c->message, sizeof c->message, "non-finite coordinate or velocity at t=%.9g", c->err_t);
    else if (c->err_kind == FMIGEN_ERR_AUGMENTED_SINGULAR)
        snprintf(c->message, sizeof c->message, "singular %s at t=%.9g: the %s formulation cannot solve for "
                 "the accelerations", what, c->err_t, form_name[FMIGEN_FORMULATION]);
#else
    (void)c;
#endif
}

#if FMIGEN_FORMULATION
int fmigen_augmented_rhs(FmigenCore *c, double t, const double *x, double *dx)
{
    const double *q = x, *v = x + NQ;
    /* generated per model (codegen_embedding.augmented_code), straight-line
     * over the structural non-zeros:
     *   Baumgarte  Φ_q q̈ = γ − 2αΦ̇ − β²Φ with M q̈ + Φ_qᵀλ = F, through
     *              (Φ_q M⁻¹ Φ_qᵀ) λ = Φ_q M⁻¹ F − (γ − 2αΦ̇ − β²Φ);
     *   penalty    (M + ρΦ_qᵀΦ_q) q̈ = F − ρΦ_qᵀ(−γ + 2ζωΦ̇ + ω²Φ), one iteration;
     *   springs    M q̈ = F − Φ_qᵀ(kΦ + bΦ̇);
     * with Φ̇ = Φ_q v + Φ_t and LDLᵀ factorizations of M (penalty: of
     * M + ρΦ_qᵀΦ_q) and of Φ_q M⁻¹ Φ_qᵀ. */
    double ubuf[FMIGEN_DIM(NU)];
    int k = FMIGEN_MODEL_FN(fmigen_augmented_accel)(t, q, v, c->p, fmigen_core_inputs(c, t, ubuf), c->fp, dx + NQ);
    if (k) return fmigen_core_fail(c, FMIGEN_ERR_AUGMENTED_SINGULAR, k == 2 ? 2 : 1, t);
    memcpy(dx, v, NQ * sizeof(double));
    if (!fmigen_all_finite(dx, 2 * NQ))   /* the bits, as above */
        return fmigen_core_fail(c, FMIGEN_ERR_DERIVATIVE, 0, t);
    return 0;
}
#endif
