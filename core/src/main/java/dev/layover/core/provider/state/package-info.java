/**
 * Fleet-wide provider state in Postgres: per provider key a cooldown ({@code layover.cooldowns}),
 * a circuit breaker ({@code layover.breakers}) and an optional rate bucket
 * ({@code layover.buckets}), shared by every worker of every JVM. See
 * {@code docs/provider-state.md}.
 *
 * <p>The API: {@link dev.layover.core.provider.state.BreakerSettings},
 * {@link dev.layover.core.provider.state.CooldownSettings} and
 * {@link dev.layover.core.provider.state.BucketSettings} (given to {@code Layover.Builder}),
 * {@link dev.layover.core.provider.state.ProviderStates} for operators (force open, force close,
 * read), and {@link dev.layover.core.provider.state.BreakerListener} for breaker changes.
 * {@link dev.layover.core.internal.gate.ProviderGate},
 * {@link dev.layover.core.internal.gate.Admission} and
 * {@link dev.layover.core.internal.gate.ProviderRun} are public only for Layover's engine and
 * {@link dev.layover.core.provider.FallbackChain}; they are not part of the API.
 */
package dev.layover.core.provider.state;
