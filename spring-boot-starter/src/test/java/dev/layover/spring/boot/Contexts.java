package dev.layover.spring.boot;

import dev.layover.spring.boot.console.LayoverConsoleAutoConfiguration;
import dev.layover.testing.TestDatabase;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;

/** Application contexts with the starter's auto-configurations on a test database. */
final class Contexts {

    private Contexts() {}

    static ApplicationContextRunner on(TestDatabase db) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        LayoverAutoConfiguration.class, LayoverDeadLettersAutoConfiguration.class,
                        LayoverHealthAutoConfiguration.class, LayoverConsoleAutoConfiguration.class))
                .withPropertyValues("spring.datasource.url=" + db.jdbcUrl(),
                        "spring.datasource.hikari.maximum-pool-size=12",
                        "layover.threads=2", "layover.poll-interval=200ms");
    }

    /** Properties whose names hold a ':' (provider keys), which withPropertyValues would split. */
    static ApplicationContextInitializer<ConfigurableApplicationContext> properties(Map<String, Object> values) {
        return context -> context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("layover-keys", values));
    }
}
