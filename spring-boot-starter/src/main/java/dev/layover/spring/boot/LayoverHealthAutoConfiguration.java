package dev.layover.spring.boot;

import dev.layover.core.Layover;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * {@link LayoverHealthIndicator} as health contributor {@code layover}, with Spring Boot 3's
 * Actuator on the classpath; off with {@code management.health.layover.enabled=false}.
 */
@AutoConfiguration(after = LayoverAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.boot.actuate.health.HealthIndicator",
        "org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator"})
@ConditionalOnBean(Layover.class)
@ConditionalOnEnabledHealthIndicator("layover")
public class LayoverHealthAutoConfiguration {

    /**
     * @param layover the application's instance
     * @param properties {@code layover.run-jobs} tells whether stopped workers are a fault
     * @return the indicator
     */
    @Bean
    @ConditionalOnMissingBean(name = "layoverHealthIndicator")
    public LayoverHealthIndicator layoverHealthIndicator(Layover layover, LayoverProperties properties) {
        return new LayoverHealthIndicator(layover, properties.isRunJobs());
    }
}
