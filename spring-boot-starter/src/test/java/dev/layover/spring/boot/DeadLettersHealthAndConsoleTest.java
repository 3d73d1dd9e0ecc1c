package dev.layover.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.console.ReplayConsole;
import dev.layover.core.Enqueued;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.dlq.DeadLetterFilter;
import dev.layover.dlq.DeadLetterRetention;
import dev.layover.dlq.DeadLetters;
import dev.layover.dlq.RecoverySweep;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** What the starter adds when layover-dlq, Actuator and layover-replay-console are on the classpath. */
@DatabaseTest
class DeadLettersHealthAndConsoleTest {

    record Order(String id) {}

    private static TestDatabase db;

    @BeforeAll
    static void database(TestDatabase testDatabase) {
        db = testDatabase;
    }

    @Configuration(proxyBeanMethods = false)
    static class ParkingApp {
        @Bean
        JobType<Order> refuse() {
            return JobType.builder("starter-refuse", Order.class).providerKey("openai:starter-health")
                    .handler((args, ctx) -> Outcome.park("refused on purpose"))
                    .build();
        }
    }

    @Test
    void deadLettersTheRecoverySweepAndRetentionAreBeansAndPlugins() {
        Contexts.on(db).withUserConfiguration(ParkingApp.class).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(DeadLetters.class).hasSingleBean(RecoverySweep.class)
                    .hasSingleBean(DeadLetterRetention.class);
            Layover layover = context.getBean(Layover.class);
            @SuppressWarnings("unchecked")
            JobType<Order> refuse = context.getBean(JobType.class);
            Enqueued job = layover.enqueue(refuse, new Order("o-1"));
            DeadLetters deadLetters = context.getBean(DeadLetters.class);
            Await.until(Duration.ofSeconds(30), "the job is parked and found by the DeadLetters bean",
                    () -> deadLetters.find(DeadLetterFilter.all(), 50).items().stream()
                            .anyMatch(d -> d.jobId().equals(job.id())));
            // both plugins scheduled their recurring task in Layover's scheduler
            assertEquals(1, db.count("select count(*) from layover.scheduled_tasks where task_name = ?",
                    RecoverySweep.TASK_NAME));
            assertEquals(1, db.count("select count(*) from layover.scheduled_tasks where task_name = ?",
                    DeadLetterRetention.TASK_NAME));
        });
    }

    @Test
    void eachDeadLetterPieceCanBeTurnedOffAndNoneIsThereWithoutLayoverDlq() {
        Contexts.on(db).withPropertyValues("layover.dlq.recovery-sweep.enabled=false", "layover.dlq.retention.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(DeadLetters.class)
                        .doesNotHaveBean(RecoverySweep.class).doesNotHaveBean(DeadLetterRetention.class));
        Contexts.on(db).withClassLoader(new FilteredClassLoader("dev.layover.dlq."))
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Layover.class)
                        .doesNotHaveBean("deadLetters").doesNotHaveBean("layoverRecoverySweep"));
    }

    @Test
    void healthSaysDatabaseWorkersAndListsOpenBreakers() {
        Contexts.on(db).withUserConfiguration(ParkingApp.class).run(context -> {
            LayoverHealthIndicator indicator = context.getBean(LayoverHealthIndicator.class);
            Health up = indicator.health();
            assertEquals(Status.UP, up.getStatus());
            assertEquals("reachable", up.getDetails().get("database"));
            assertEquals("running", up.getDetails().get("workers"));
            assertEquals(List.of(), up.getDetails().get("openBreakers"));

            Layover layover = context.getBean(Layover.class);
            assertTrue(layover.providerStates().forceOpen("openai:starter-health", Duration.ofMinutes(5), "health test"));
            Health open = indicator.health();
            assertEquals(Status.UP, open.getStatus(), "a provider's outage is not the application's");
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> breakers = (List<Map<String, Object>>) open.getDetails().get("openBreakers");
            assertEquals(1, breakers.size(), breakers.toString());
            assertEquals("openai:starter-health", breakers.get(0).get("providerKey"));
            assertEquals("open", breakers.get(0).get("state"));
            layover.providerStates().forceClose("openai:starter-health", "health test done");

            layover.stop();
            Health stopped = indicator.health();
            assertEquals(Status.DOWN, stopped.getStatus());
            assertEquals("stopped", stopped.getDetails().get("workers"));
        });
        Contexts.on(db).withPropertyValues("management.health.layover.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LayoverHealthIndicator.class));
    }

    @Test
    void healthIsDownWhenTheDatabaseDoesNotAnswer() {
        PGSimpleDataSource nowhere = new PGSimpleDataSource();
        nowhere.setUrl("jdbc:postgresql://127.0.0.1:1/nowhere?connectTimeout=2");
        Layover layover = Layover.builder(nowhere).migrate(false).build();
        Health h = new LayoverHealthIndicator(layover, true).health();
        assertEquals(Status.DOWN, h.getStatus());
        assertThat(String.valueOf(h.getDetails().get("database"))).startsWith("unreachable:");
    }

    @Test
    void theStandaloneConsoleServesTheApplicationsLayover() throws Exception {
        Contexts.on(db).withPropertyValues("layover.console.enabled=true", "layover.console.mode=standalone",
                "layover.console.port=0", "layover.console.token=a-token-of-sixteen-chars").run(context -> {
                    ReplayConsole console = context.getBean(ReplayConsole.class);
                    HttpResponse<String> overview = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                                    URI.create(console.url() + "api/overview"))
                            .header("Authorization", "Bearer a-token-of-sixteen-chars").build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertEquals(200, overview.statusCode(), overview.body());
                    HttpResponse<String> anonymous = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                            URI.create(console.url() + "api/overview")).build(), HttpResponse.BodyHandlers.ofString());
                    assertEquals(401, anonymous.statusCode());
                });
    }

    @Test
    void theConsoleIsOffByDefaultAndABadStandaloneSettingNamesItsProperty() {
        Contexts.on(db).run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(ReplayConsole.class));
        Contexts.on(db).withPropertyValues("layover.console.enabled=true", "layover.console.mode=standalone",
                "layover.console.bind=0.0.0.0").run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).hasStackTraceContaining("layover.console.token");
                });
    }
}
