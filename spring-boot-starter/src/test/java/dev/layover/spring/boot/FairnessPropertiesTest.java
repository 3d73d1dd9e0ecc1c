package dev.layover.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.FairnessSettings;
import dev.layover.core.provider.state.ProviderStates;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.env.PropertiesPropertySourceLoader;
import org.springframework.boot.env.PropertySourceLoader;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ClassPathResource;

/**
 * {@code layover.fairness.*}: pattern keys bind from {@code .properties} and YAML files, the
 * settings reach the running Layover on a real Postgres, a refused value stops the application
 * naming its property, with nothing set the builder's fairness is left as it was, and the IDE
 * metadata lists them with Layover's defaults.
 */
@DatabaseTest
class FairnessPropertiesTest {

    private static final String KEY = "openai:starter-fair";

    /** A job of a tenant. */
    record Work(String tenant, int n) {}

    @Configuration(proxyBeanMethods = false)
    static class FairApp {
        static final ConcurrentLinkedQueue<String> STARTED = new ConcurrentLinkedQueue<>();

        @Bean
        JobType<Work> fairWork() {
            return JobType.builder("starter-fair-work", Work.class)
                    .providerKey(KEY)
                    .fairnessKey(w -> "tenant:" + w.tenant())
                    .handler((w, ctx) -> {
                        STARTED.add(w.tenant());
                        return Outcome.done();
                    })
                    .build();
        }
    }

    private static List<PropertySource<?>> load(PropertySourceLoader loader, String resource) {
        try {
            return loader.load(resource, new ClassPathResource(resource));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The sources of a file, first in the environment, as Boot adds application.properties / .yml. */
    private static ApplicationContextInitializer<ConfigurableApplicationContext> file(List<PropertySource<?>> sources) {
        return context -> sources.forEach(s -> context.getEnvironment().getPropertySources().addFirst(s));
    }

    private static LayoverProperties bind(Iterable<PropertySource<?>> sources) {
        return new Binder(ConfigurationPropertySources.from(sources)).bind("layover", LayoverProperties.class)
                .orElseGet(LayoverProperties::new);
    }

    @Test
    void patternKeysBindFromPropertiesAndYamlFiles() {
        Map<String, Double> expected = Map.of("tenant:acme", 3.0, "tenant:premium-*", 2.0);
        for (LayoverProperties p : List.of(bind(load(new PropertiesPropertySourceLoader(), "fairness-test.properties")),
                bind(load(new YamlPropertySourceLoader(), "fairness-test.yml")))) {
            assertEquals(expected, p.getFairness().getWeights(), "the ':' and '*' of a bracketed key are kept");
            assertEquals(0.5, p.getFairness().getLowPriorityShare());
        }
        // without brackets Boot drops every character but letters, digits, '-' and '.': the pitfall the docs warn of
        LayoverProperties unbracketed = bind(List.of(new MapPropertySource("plain",
                Map.of("layover.fairness.weights.tenant:premium-*", "2"))));
        assertEquals(Map.of("tenantpremium-", 2.0), unbracketed.getFairness().getWeights());
        LayoverProperties empty = bind(List.of(new MapPropertySource("empty", Map.of("layover.fairness.weights[tenant:*]", ""))));
        assertEquals(Map.of(), empty.getFairness().getWeights(), "an empty value binds no entry (Boot's map binding)");
    }

    @Test
    void theIdeMetadataListsThePropertiesWithLayoversDefaults() throws IOException {
        JsonNode metadata;
        try (var in = new ClassPathResource("META-INF/spring-configuration-metadata.json").getInputStream()) {
            metadata = new ObjectMapper().readTree(in);
        }
        Map<String, JsonNode> properties = new java.util.HashMap<>();
        metadata.get("properties").forEach(n -> properties.put(n.get("name").asText(), n));
        assertNull(properties.get("layover.fairness.horizon"), "a removed property is not offered");
        JsonNode share = properties.get("layover.fairness.low-priority-share");
        assertEquals(FairnessSettings.DEFAULT_LOW_PRIORITY_SHARE, share.get("defaultValue").asDouble());
        assertEquals("java.util.Map<java.lang.String,java.lang.Double>",
                properties.get("layover.fairness.weights").get("type").asText());
        List<String> keyHints = new ArrayList<>();
        metadata.get("hints").forEach(h -> {
            if (h.get("name").asText().equals("layover.fairness.weights.keys")) {
                h.get("values").forEach(v -> keyHints.add(v.get("value").asText()));
            }
        });
        assertEquals(List.of("tenant:acme", "tenant:premium-*"), keyHints);
    }

    @Test
    void thePropertiesReachTheRunningLayover(TestDatabase db) {
        FairApp.STARTED.clear();
        Contexts.on(db).withUserConfiguration(FairApp.class)
                .withInitializer(file(load(new PropertiesPropertySourceLoader(), "fairness-test.properties")))
                .withInitializer(Contexts.properties(Map.of("layover.buckets[" + KEY + "].requests-per-minute", "1200")))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Layover layover = context.getBean(Layover.class);

                    // the weights, written at start as configured ones
                    assertEquals(List.of(Map.of("pattern", "tenant:acme", "weight", 3.0, "origin", "config"),
                            Map.of("pattern", "tenant:premium-*", "weight", 2.0, "origin", "config")),
                            db.rows("select pattern, weight, origin from layover.fairness_weights order by pattern"));
                    assertEquals(2.0, ((Number) db.value("select layover.fairness_weight('tenant:premium-7')")).doubleValue(),
                            "the pattern matches");
                    ProviderStates states = layover.providerStates();
                    assertEquals(3.0, states.setFairnessWeight("tenant:acme", 5, "starter test"),
                            "the operators' handle reads the configured weight as the one in force before");
                    assertEquals(5.0, states.revertFairnessWeight("tenant:acme"));
                    assertEquals(3.0, db.value("select weight from layover.fairness_weights where pattern = 'tenant:acme'"),
                            "reverting gives the configured weight back");

                    @SuppressWarnings("unchecked")
                    JobType<Work> work = context.getBean(JobType.class);
                    List<Work> jobs = new ArrayList<>();
                    for (int i = 0; i < 60; i++) {
                        jobs.add(new Work("batch", i)); // enqueued first
                    }
                    for (int i = 0; i < 40; i++) {
                        jobs.add(new Work("interactive", i));
                    }
                    layover.enqueueBatch(work, jobs,
                            w -> EnqueueOptions.now().withPriority(w.tenant().equals("interactive") ? 5 : 0));

                    // low-priority-share 0.5: about half of the key's admissions go to batch while interactive jobs
                    // wait (without the property, 0.1: about 4 of the first 40)
                    Await.until(Duration.ofSeconds(30), "the first 40 starts", () -> FairApp.STARTED.size() >= 40);
                    List<String> first = new ArrayList<>(FairApp.STARTED).subList(0, 40);
                    int batch = Collections.frequency(first, "batch");
                    assertTrue(batch >= 12, "batch had " + batch + " of the first 40 permits: " + first);
                });
    }

    @Test
    void withNothingSetTheContextConfiguresNoFairness(TestDatabase db) {
        Contexts.on(db).withUserConfiguration(FairApp.class).run(context -> {
            assertThat(context).hasNotFailed();
            LayoverProperties.Fairness f = context.getBean(LayoverProperties.class).getFairness();
            assertNull(f.getLowPriorityShare());
            assertTrue(f.getWeights().isEmpty());
            assertTrue(context.getBean(Layover.class).isRunning());
            assertEquals(0L, db.count("select count(*) from layover.fairness_weights"), "no weight configured");
        });
    }

    @Test
    void withNothingSetTheBuildersFairnessIsLeftAsItWas(TestDatabase db) {
        LayoverProperties p = new LayoverProperties();
        p.setThreads(2);
        try (HikariDataSource ds = db.newDataSource(8)) {
            Layover.Builder b = Layover.builder(ds)
                    .fairness(FairnessSettings.defaults().withWeight("tenant:kept", 4));
            PropertiesApplier.apply(p, b);
            Layover layover = b.build().start();
            try {
                assertEquals(4.0, db.value("select weight from layover.fairness_weights where pattern = 'tenant:kept'"),
                        "the weight set before the properties were applied is still the builder's");
            } finally {
                layover.stop();
            }
        }
    }

    @Test
    void aWeightWithoutAValueIsRefusedNamingItsProperty() {
        LayoverProperties p = new LayoverProperties();
        p.getFairness().getWeights().put("tenant:*", null); // set in code: Boot's binding drops an empty value
        InvalidLayoverPropertyException e = org.junit.jupiter.api.Assertions.assertThrows(InvalidLayoverPropertyException.class,
                () -> PropertiesApplier.apply(p, Layover.builder(new org.postgresql.ds.PGSimpleDataSource())));
        assertEquals("layover.fairness.weights[tenant:*]", e.property());
        assertTrue(e.getMessage().contains("the fairness weight of tenant:* is missing"), e.getMessage());
    }

    private static InvalidLayoverPropertyException refusal(Throwable failure) {
        Throwable t = failure;
        while (t != null && !(t instanceof InvalidLayoverPropertyException)) {
            t = t.getCause();
        }
        assertThat(t).as("the startup failure's cause").isInstanceOf(InvalidLayoverPropertyException.class);
        return (InvalidLayoverPropertyException) t;
    }

    private static void assertRefused(ApplicationContextRunner runner, String property, String message) {
        runner.run(context -> {
            assertThat(context).hasFailed();
            InvalidLayoverPropertyException e = refusal(context.getStartupFailure());
            assertEquals(property, e.property());
            assertTrue(e.getMessage().startsWith(property + ": "), e.getMessage());
            assertTrue(e.getMessage().contains(message), e.getMessage());
            FailureAnalysis analysis = new LayoverFailureAnalyzer().analyze(context.getStartupFailure());
            assertTrue(analysis.getDescription().startsWith("Layover refused the property " + property + ": "),
                    analysis.getDescription());
            assertTrue(analysis.getAction().startsWith("Change " + property + " "), analysis.getAction());
        });
    }

    @Test
    void aRefusedValueStopsTheApplicationNamingItsProperty(TestDatabase db) {
        assertRefused(Contexts.on(db).withInitializer(Contexts.properties(Map.of("layover.fairness.weights[tenant:acme]", "-1"))),
                "layover.fairness.weights[tenant:acme]", "fairness weight of tenant:acme must be in (0, 1000000], was -1.0");
        assertRefused(Contexts.on(db).withPropertyValues("layover.fairness.low-priority-share=1"),
                "layover.fairness.low-priority-share", "lowPriorityShare must be in [0, 1), was 1.0");
        assertRefused(Contexts.on(db).withPropertyValues("layover.fairness.horizon=2s"),
                "layover.fairness.horizon", "was removed: the pick admits jobs in fair order");
        assertRefused(Contexts.on(db).withPropertyValues("layover.buckets[fake].lease=8"),
                "layover.buckets[fake].lease", "was removed: a worker no longer leases permits ahead");
    }
}
