package dev.layover.spring.boot;

import dev.layover.core.Layover;

/**
 * Changes the {@link Layover.Builder} the starter configured, for everything the
 * {@code layover.*} properties do not cover: a breaker per key, token costs, an exception
 * classifier, an {@code ObjectMapper}, breaker listeners, extra db-scheduler tasks. Declare one or
 * more as beans; they run in {@code @Order}, after the properties and the {@code JobType} and
 * {@code LayoverPlugin} beans were applied, so a customizer has the last word.
 *
 * <pre>{@code
 * @Bean
 * LayoverBuilderCustomizer tokenCosts(JobType<Translate> translate) {
 *     return builder -> builder
 *             .tokenCost(translate, args -> args.text().length() / 4)
 *             .breaker("openai:gpt-4o", BreakerSettings.defaults().withOpenFor(Duration.ofMinutes(1), Duration.ofMinutes(20)));
 * }
 * }</pre>
 */
@FunctionalInterface
public interface LayoverBuilderCustomizer {

    /**
     * @param builder the builder, before {@link Layover.Builder#build()}
     */
    void customize(Layover.Builder builder);
}
