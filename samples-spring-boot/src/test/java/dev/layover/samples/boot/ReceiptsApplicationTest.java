package dev.layover.samples.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Enqueued;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample Boot application, started as Spring Boot starts it, on a fresh database of the
 * project's test server (LAYOVER_TEST_JDBC_URL, else Testcontainers, else embedded) with no
 * Layover schema in it: the starter migrates it, runs one receipt and parks the other.
 */
@SpringBootTest
@DatabaseTest
class ReceiptsApplicationTest {

    private static final TestDatabase DB = LayoverPostgresExtension.emptyDatabase();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", DB::jdbcUrl);
    }

    @AfterAll
    static void dropDatabase() {
        DB.close();
    }

    @Autowired
    Checkout checkout;

    @Autowired
    Layover layover;

    @Autowired
    ConfigurableApplicationContext context;

    @Test
    void runsAJobAndParksTheOneThatCannotSucceed() {
        assertTrue(layover.isRunning(), "the starter started the workers with the context");
        assertEquals("send-receipt", layover.jobTypes().get(0).name(), "the JobType bean is registered");

        Enqueued sent = checkout.orderPlaced("order-1", "ada@example.com");
        Enqueued parked = checkout.orderPlaced("order-2", "not-an-address");
        assertTrue(sent.created() && parked.created());
        assertFalse(checkout.orderPlaced("order-1", "ada@example.com").created(), "the order id is the job's key");

        Await.until(Duration.ofSeconds(30), "both jobs leave the queue",
                () -> DB.count("select count(*) from layover.jobs") == 0
                        && DB.count("select count(*) from layover.job_history") == 2);
        Map<String, Object> done = DB.row("select outcome, attempts from layover.job_history where job_id = ?", sent.id());
        assertEquals("completed", done.get("outcome"));
        assertEquals(0, ((Number) done.get("attempts")).intValue());
        Map<String, Object> dead = DB.row(
                "select job_type, failure_type, state, error_message, args->>'email' as email "
                        + "from layover.dead_letters where job_id = ?", parked.id());
        assertEquals("send-receipt", dead.get("job_type"));
        assertEquals("handler_parked", dead.get("failure_type"));
        assertEquals("parked", dead.get("state"));
        assertEquals("not-an-address", dead.get("email"));
        assertTrue(String.valueOf(dead.get("error_message")).contains("not an email address"), dead.toString());

        context.stop();
        assertFalse(layover.isRunning(), "stopping the context stops the workers");
    }
}
