package dev.layover.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.kagkarlsson.scheduler.task.Task;
import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.LayoverPlugin;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;

/** The starter in an application context, on a real Postgres. */
// alone in the fast profile: it looks for the layover-shutdown thread among the JVM's threads
@Isolated
@DatabaseTest
class LayoverAutoConfigurationTest {

    record Ping(String id) {}

    private static TestDatabase db;

    @BeforeAll
    static void database(TestDatabase testDatabase) {
        db = testDatabase;
    }

    @Configuration(proxyBeanMethods = false)
    static class PingApp {
        static final CountDownLatch RAN = new CountDownLatch(1);

        @Bean
        JobType<Ping> ping() {
            return JobType.of("starter-ping", Ping.class, (args, ctx) -> {
                RAN.countDown();
                return Outcome.done();
            });
        }

        @Bean
        @Order(2)
        LayoverBuilderCustomizer lastWord() {
            return builder -> builder.workerName("from-customizer");
        }

        @Bean
        LayoverPlugin recordingPlugin() {
            return new RecordingPlugin();
        }
    }

    static final class RecordingPlugin implements LayoverPlugin {
        final AtomicReference<Layover> startedWith = new AtomicReference<>();
        final AtomicBoolean stopped = new AtomicBoolean();

        @Override
        public List<Task<?>> tasks(Layover layover) {
            startedWith.set(layover);
            return List.of();
        }

        @Override
        public void stop(Layover layover) {
            stopped.set(true);
        }
    }

    @Test
    void jobTypeBeansRunPropertiesAndCustomizersApplyPluginsStartAndStopWithTheContext() throws Exception {
        AtomicReference<Layover> layoverRef = new AtomicReference<>();
        AtomicReference<RecordingPlugin> pluginRef = new AtomicReference<>();
        Contexts.on(db).withUserConfiguration(PingApp.class)
                .withPropertyValues("layover.worker-name=from-properties")
                .withInitializer(Contexts.properties(Map.of(
                        "layover.buckets[openai:starter-test].requests-per-minute", "120",
                        "layover.buckets[openai:starter-test].input-tokens-per-minute", "9000",
                        "layover.buckets[openai:starter-test].token-burst", "30s")))
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(Layover.class).hasSingleBean(LayoverLifecycle.class);
                    Layover layover = context.getBean(Layover.class);
                    layoverRef.set(layover);
                    pluginRef.set(context.getBean("recordingPlugin", RecordingPlugin.class));
                    assertTrue(layover.isRunning(), "started with the context");
                    assertSame(layover, pluginRef.get().startedWith.get());

                    @SuppressWarnings("unchecked")
                    JobType<Ping> ping = context.getBean(JobType.class);
                    Enqueued job = layover.enqueue(ping, new Ping("p-1"));
                    assertTrue(PingApp.RAN.await(30, TimeUnit.SECONDS), "the JobType bean's handler ran");
                    Await.until(Duration.ofSeconds(10), "the job's history row",
                            () -> db.count("select count(*) from layover.job_history where job_id = ?", job.id()) == 1);
                    assertEquals("from-customizer",
                            db.value("select worker from layover.job_history where job_id = ?", job.id()),
                            "a customizer runs after the properties");
                    assertEquals(120.0, ((Number) db.value(
                            "select requests_per_minute from layover.buckets where provider_key = 'openai:starter-test'"))
                            .doubleValue(), "layover.buckets reached the database");
                    assertEquals(Map.of("input_tokens_per_minute", 9000.0, "token_burst_ms", 30_000), db.row(
                            "select input_tokens_per_minute, token_burst_ms from layover.buckets "
                            + "where provider_key = 'openai:starter-test'"), "and its token dimensions");
                });
        assertFalse(layoverRef.get().isRunning(), "stopped with the context");
        assertTrue(pluginRef.get().stopped.get(), "plugins stop with it");
    }

    private static void assertSame(Object expected, Object actual) {
        org.junit.jupiter.api.Assertions.assertSame(expected, actual);
    }

    @Configuration(proxyBeanMethods = false)
    static class SlowApp {
        static final CountDownLatch STARTED = new CountDownLatch(1);
        static final CountDownLatch RELEASE = new CountDownLatch(1);

        @Bean
        JobType<Ping> slow() {
            return JobType.of("starter-slow", Ping.class, (args, ctx) -> {
                STARTED.countDown();
                if (!RELEASE.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never released");
                }
                return Outcome.done();
            });
        }
    }

    @Test
    void closingTheContextLetsTheRunningJobFinish() throws Exception {
        Contexts.on(db).withUserConfiguration(SlowApp.class).run(context -> {
            Layover layover = context.getBean(Layover.class);
            @SuppressWarnings("unchecked")
            JobType<Ping> slow = context.getBean(JobType.class);
            Enqueued job = layover.enqueue(slow, new Ping("s-1"));
            assertTrue(SlowApp.STARTED.await(30, TimeUnit.SECONDS));

            Thread closer = new Thread(() -> ((ConfigurableApplicationContext) context.getSourceApplicationContext()).close());
            closer.start();
            // the job is still running when the lifecycle's stop begins on its own thread
            Await.until(Duration.ofSeconds(10), "Layover's stop has begun", LayoverAutoConfigurationTest::shutdownThreadAlive);
            SlowApp.RELEASE.countDown();
            closer.join(TimeUnit.SECONDS.toMillis(60));
            assertFalse(closer.isAlive(), "close returned");
            assertFalse(layover.isRunning());
            assertEquals("completed", db.value("select outcome from layover.job_history where job_id = ?", job.id()));
            assertEquals(0, db.count("select count(*) from layover.jobs where id = ?", job.id()));
        });
    }

    private static boolean shutdownThreadAlive() {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("layover-shutdown"));
    }

    @Test
    void runJobsFalseIsAnEnqueueOnlyClient() {
        Contexts.on(db).withUserConfiguration(PingApp.class).withPropertyValues("layover.run-jobs=false").run(context -> {
            Layover layover = context.getBean(Layover.class);
            assertFalse(layover.isRunning());
            @SuppressWarnings("unchecked")
            JobType<Ping> ping = context.getBean(JobType.class);
            Enqueued job = layover.enqueue(ping, new Ping("client-1"));
            assertEquals("scheduled", db.value("select state from layover.jobs where id = ?", job.id()));
            db.update("delete from layover.scheduled_tasks where task_instance = ?", job.id());
        });
    }

    @Test
    void aRefusedPropertyStopsTheApplicationNamingIt() {
        Contexts.on(db).withPropertyValues("layover.threads=0").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("threads must be at least 1");
            Throwable t = context.getStartupFailure();
            while (t != null && !(t instanceof InvalidLayoverPropertyException)) {
                t = t.getCause();
            }
            assertThat(t).isInstanceOf(InvalidLayoverPropertyException.class);
            assertEquals("layover.threads", ((InvalidLayoverPropertyException) t).property());
        });
        Contexts.on(db).withInitializer(Contexts.properties(Map.of("layover.concurrency-limits[tenant:*]", "0")))
                .run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining("layover.concurrency-limits[tenant:*]");
        });
    }

    @Test
    void layoverEnabledFalseConfiguresNothing() {
        Contexts.on(db).withPropertyValues("layover.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(Layover.class));
    }

    @Configuration(proxyBeanMethods = false)
    static class MetricsApp {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        JobType<Ping> counted() {
            return JobType.of("starter-counted", Ping.class, (args, ctx) -> Outcome.done());
        }
    }

    @Test
    void metricsGoToTheApplicationsMeterRegistry() {
        Contexts.on(db).withUserConfiguration(MetricsApp.class).run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            @SuppressWarnings("unchecked")
            JobType<Ping> counted = context.getBean(JobType.class);
            context.getBean(Layover.class).enqueue(counted, new Ping("m-1"));
            Await.until(Duration.ofSeconds(30), "layover.jobs.completed counted in the application's registry", () -> {
                Counter c = registry.find("layover.jobs.completed").tag("job_type", "starter-counted").counter();
                return c != null && c.count() == 1.0;
            });
        });
    }
}
