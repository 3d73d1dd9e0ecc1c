package dev.layover.spring.boot;

import dev.layover.core.JobType;
import dev.layover.core.schedule.InvalidScheduleException;
import dev.layover.core.schedule.Schedule;
import dev.layover.core.Layover;
import dev.layover.core.LayoverPlugin;
import dev.layover.core.metrics.MicrometerMetrics;
import dev.layover.core.InteractiveCalls;
import dev.layover.core.tracing.OpenTelemetryTracing;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;

/**
 * Layover on the application's {@link DataSource}.
 *
 * <ul>
 *   <li>{@link Layover} (unless the application defines its own): built from the
 *       {@code layover.*} properties ({@link LayoverProperties}), with every {@link JobType} bean
 *       registered and every {@link LayoverPlugin} bean added, then every
 *       {@link LayoverBuilderCustomizer} bean applied in order. Building it migrates schema
 *       {@code layover} unless {@code layover.migrate=false}.
 *   <li>{@link LayoverLifecycle}: starts the workers when the context has started, stops them
 *       gracefully with it.
 *   <li>{@link InteractiveCalls}: the instance's admission of provider calls made outside jobs (a
 *       controller's chat answer), sharing each key's fleet-wide state with the jobs
 *       ({@code docs/interactive.md}).
 *   <li>With Micrometer and a {@code MeterRegistry} bean (Spring Boot Actuator): Layover's metrics
 *       ({@code docs/observability.md}) go to that registry.
 *   <li>With the OpenTelemetry API and an {@code OpenTelemetry} bean (Spring Boot's OpenTelemetry
 *       support, Micrometer Tracing's OpenTelemetry bridge, OpenTelemetry's own starter): Layover's
 *       traces go through it ({@code layover.tracing.enabled=false} turns that off).
 * </ul>
 *
 * <p>Off with {@code layover.enabled=false}. The pool needs at least {@code layover.threads + 6}
 * connections ({@code spring.datasource.hikari.maximum-pool-size}, default 10, so raise it
 * with the threads).
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.opentelemetry.OpenTelemetryAutoConfiguration",
        "org.springframework.boot.opentelemetry.autoconfigure.OpenTelemetrySdkAutoConfiguration",
        "io.opentelemetry.instrumentation.spring.autoconfigure.OpenTelemetryAutoConfiguration"})
@ConditionalOnClass(Layover.class)
@ConditionalOnSingleCandidate(DataSource.class)
@ConditionalOnProperty(prefix = "layover", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(LayoverProperties.class)
public class LayoverAutoConfiguration {

    /**
     * The application's Layover instance, built but not started.
     *
     * @param dataSource the application's data source
     * @param properties the {@code layover.*} properties
     * @param jobTypes every {@code JobType} bean
     * @param schedules every {@code Schedule} bean (recurring jobs; {@code layover.schedules.*} add more)
     * @param plugins every {@code LayoverPlugin} bean
     * @param customizers every {@code LayoverBuilderCustomizer} bean
     * @param environment where a removed property is looked for
     * @return the instance
     */
    @Bean
    @ConditionalOnMissingBean
    public Layover layover(DataSource dataSource, LayoverProperties properties, ObjectProvider<JobType<?>> jobTypes,
            ObjectProvider<Schedule<?>> schedules, ObjectProvider<LayoverPlugin> plugins, ObjectProvider<LayoverBuilderCustomizer> customizers,
            Environment environment) {
        refuseRemoved(environment);
        Layover.Builder builder = Layover.builder(dataSource);
        PropertiesApplier.apply(properties, builder);
        java.util.Map<String, JobType<?>> byName = new java.util.LinkedHashMap<>();
        jobTypes.orderedStream().forEach(t -> {
            builder.register(t);
            byName.put(t.name(), t);
        });
        schedules.orderedStream().forEach(builder::schedule);
        java.util.Set<String> fromProperties = properties.getSchedules().keySet();
        PropertiesApplier.schedules(properties.getSchedules(), byName).forEach(builder::schedule);
        plugins.orderedStream().forEach(builder::plugin);
        customizers.orderedStream().forEach(c -> c.customize(builder));
        try {
            return builder.build();
        } catch (InvalidScheduleException e) {
            // a schedule of layover.schedules.<name> refused at build (args its job type cannot read): name the property
            for (String name : fromProperties) {
                if (e.getMessage().startsWith("schedule '" + name + "'")) {
                    throw new InvalidLayoverPropertyException("layover.schedules." + name, e);
                }
            }
            throw e;
        }
    }

    /**
     * Properties a release removed, each with what replaced it: refused rather than ignored, so that
     * an upgrade does not run silently without a setting its application relies on.
     */
    private static final java.util.Map<String, String> REMOVED = java.util.Map.of(
            "layover.fairness.horizon", "was removed: the pick admits jobs in fair order when they run, nothing is "
                    + "booked ahead (docs/decisions/0001-the-pick-is-the-admission.md); delete it");

    private static void refuseRemoved(Environment environment) {
        REMOVED.forEach((name, why) -> {
            if (environment.containsProperty(name)) {
                throw new InvalidLayoverPropertyException(name, new IllegalArgumentException(why));
            }
        });
        // a bucket's lease, under any key: layover.buckets[openai:gpt-4o].lease
        for (org.springframework.boot.context.properties.source.ConfigurationPropertySource source
                : org.springframework.boot.context.properties.source.ConfigurationPropertySources.get(environment)) {
            if (source instanceof org.springframework.boot.context.properties.source.IterableConfigurationPropertySource it) {
                it.stream().map(Object::toString)
                        .filter(n -> n.startsWith("layover.buckets") && n.endsWith(".lease"))
                        .findFirst().ifPresent(n -> {
                            throw new InvalidLayoverPropertyException(n, new IllegalArgumentException(
                                    "was removed: a worker no longer leases permits ahead, the pick takes what it "
                                            + "admits (docs/decisions/0001-the-pick-is-the-admission.md); delete it"));
                        });
            }
        }
    }

    /**
     * Provider calls made outside jobs (a web request's answer), admitted by the same fleet-wide
     * state as the jobs of their key, first ({@link Layover#interactive()}).
     *
     * @param layover the instance
     * @return its interactive calls' handle
     */
    @Bean
    @ConditionalOnMissingBean
    public InteractiveCalls layoverInteractiveCalls(Layover layover) {
        return layover.interactive();
    }

    /**
     * Starts and stops the workers with the context.
     *
     * @param layover the instance
     * @param properties {@code layover.run-jobs} decides whether workers start
     * @return the lifecycle
     */
    @Bean
    @ConditionalOnMissingBean
    public LayoverLifecycle layoverLifecycle(Layover layover, LayoverProperties properties) {
        return new LayoverLifecycle(layover, properties.isRunJobs());
    }

    /** Micrometer, when the application has it. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
    static class Metrics {

        /**
         * Reports Layover's metrics to the application's registry (the primary one, when there are
         * several); runs before the application's customizers, which may replace it.
         *
         * @param registry the application's meter registry, when there is one
         * @return the customizer
         */
        @Bean
        @Order(Ordered.HIGHEST_PRECEDENCE)
        LayoverBuilderCustomizer layoverMicrometerMetrics(ObjectProvider<MeterRegistry> registry) {
            return builder -> registry.ifUnique(r -> builder.metrics(MicrometerMetrics.of(r)));
        }
    }

    /** OpenTelemetry, when the application has it. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.opentelemetry.api.OpenTelemetry")
    @ConditionalOnProperty(prefix = "layover.tracing", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class Traces {

        /**
         * Traces Layover's enqueues and runs through the application's {@code OpenTelemetry} bean
         * (the primary one, when there are several); runs before the application's customizers,
         * which may replace it. Without a bean (the Java agent alone), a customizer sets
         * {@code OpenTelemetryTracing.global()}.
         *
         * @param openTelemetry the application's OpenTelemetry, when there is one
         * @return the customizer
         */
        @Bean
        @Order(Ordered.HIGHEST_PRECEDENCE)
        LayoverBuilderCustomizer layoverOpenTelemetryTracing(ObjectProvider<OpenTelemetry> openTelemetry) {
            return builder -> openTelemetry.ifUnique(o -> builder.tracing(OpenTelemetryTracing.of(o)));
        }
    }
}
