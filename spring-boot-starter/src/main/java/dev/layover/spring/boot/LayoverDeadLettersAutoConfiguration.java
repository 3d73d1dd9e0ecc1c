package dev.layover.spring.boot;

import dev.layover.core.Layover;
import dev.layover.dlq.DeadLetterRetention;
import dev.layover.dlq.DeadLetters;
import dev.layover.dlq.RecoverySweep;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * The dead-letter store, with layover-dlq on the classpath.
 *
 * <ul>
 *   <li>{@link DeadLetters}: find, replay, discard and review dead letters
 *       ({@code layover.dead_letters}, every action audited in {@code layover.audit_log}).
 *   <li>{@link RecoverySweep} (a plugin of the Layover instance, unless
 *       {@code layover.dlq.recovery-sweep.enabled=false}): parked jobs come back by themselves
 *       when their provider's breaker closes; one recurring task, {@code layover-recovery-sweep},
 *       on one worker of the cluster at a time.
 *   <li>{@link DeadLetterRetention} (a plugin, unless {@code layover.dlq.retention.enabled=false}):
 *       deletes replayed and discarded dead letters older than {@code layover.dlq.retention.keep}
 *       (30 days) every hour; parked ones are never deleted.
 * </ul>
 *
 * <p>Each bean backs off when the application defines its own of that type.
 */
@AutoConfiguration(after = LayoverAutoConfiguration.class)
@ConditionalOnClass(DeadLetters.class)
@ConditionalOnBean(Layover.class)
public class LayoverDeadLettersAutoConfiguration {

    /**
     * @param layover the application's instance (its job types decide what can be replayed)
     * @return the store
     */
    @Bean
    @ConditionalOnMissingBean
    public DeadLetters deadLetters(Layover layover) {
        return DeadLetters.create(layover);
    }

    /**
     * @param properties {@code layover.dlq.recovery-sweep.*}
     * @return the sweep, added to the Layover instance as a plugin
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "layover.dlq.recovery-sweep", name = "enabled", havingValue = "true",
            matchIfMissing = true)
    public RecoverySweep layoverRecoverySweep(LayoverProperties properties) {
        LayoverProperties.Sweep s = properties.getDlq().getRecoverySweep();
        RecoverySweep.Builder b = RecoverySweep.builder();
        PropertiesApplier.set("layover.dlq.recovery-sweep.check-every", () -> b.checkEvery(s.getCheckEvery()));
        PropertiesApplier.set("layover.dlq.recovery-sweep.first-batch", () -> b.firstBatch(s.getFirstBatch()));
        PropertiesApplier.set("layover.dlq.recovery-sweep.growth-factor", () -> b.growthFactor(s.getGrowthFactor()));
        PropertiesApplier.set("layover.dlq.recovery-sweep.max-batch", () -> b.maxBatch(s.getMaxBatch()));
        PropertiesApplier.set("layover.dlq.recovery-sweep.spread", () -> b.spreadOver(s.getSpread()));
        PropertiesApplier.set("layover.dlq.recovery-sweep.replay-budget", () -> b.replayBudget(s.getReplayBudget()));
        PropertiesApplier.set("layover.dlq.recovery-sweep.close-grace", () -> b.closeGrace(s.getCloseGrace()));
        b.trials(s.isTrials());
        return b.build();
    }

    /**
     * @param dataSource the application's data source (Layover's)
     * @param properties {@code layover.dlq.retention.*}
     * @return the retention, added to the Layover instance as a plugin
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "layover.dlq.retention", name = "enabled", havingValue = "true",
            matchIfMissing = true)
    public DeadLetterRetention layoverDeadLetterRetention(DataSource dataSource, LayoverProperties properties) {
        LayoverProperties.Retention r = properties.getDlq().getRetention();
        DeadLetterRetention.Builder b = DeadLetterRetention.builder(dataSource);
        PropertiesApplier.set("layover.dlq.retention.keep", () -> b.keep(r.getKeep()));
        PropertiesApplier.set("layover.dlq.retention.every", () -> b.every(r.getEvery()));
        PropertiesApplier.set("layover.dlq.retention.batch-size", () -> b.batchSize(r.getBatchSize()));
        return b.build();
    }
}
