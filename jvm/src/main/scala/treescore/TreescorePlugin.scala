package treescore

import java.util.{Collections, Map => JMap}

import com.codahale.metrics.{Gauge, MetricRegistry}
import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.slf4j.LoggerFactory

import treescore.nativelib.{CacheBudget, ModelCache, NativeMemory}
import treescore.wire.WireCodes

/**
 * Spark's plugin for treescore (`spark.plugins=treescore.TreescorePlugin`): it makes the native
 * memory treescore holds visible to Spark's metrics system, and checks at startup that the
 * executors' memory overhead can hold it.
 *
 * Each executor registers gauges (under `plugin.treescore.TreescorePlugin`) that any configured
 * sink (JMX, the Prometheus servlet, CSV) reports: bytes held per kind (`nativeMemory.<kind>`,
 * wire/codes.txt's NativeMemory kinds), in total, and at peak; models loaded, models evicted for
 * the budget, and the budget itself. A plugin is read when a SparkContext starts, so a session
 * that is already running (treescore.enable) has no metrics until it restarts with the setting.
 */
class TreescorePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new DriverPlugin {
    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      TreescorePlugin.warnIfShort(CacheBudget.of(sc.getConf))
      Collections.emptyMap()
    }
  }

  override def executorPlugin(): ExecutorPlugin = new ExecutorPlugin {
    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      TreescorePlugin.registerGauges(ctx.metricRegistry())
      // The driver has said it for the driver's own executor in local mode.
      if (ctx.executorID() != "driver") TreescorePlugin.warnIfShort(CacheBudget.of(ctx.conf()))
    }
  }
}

object TreescorePlugin {
  private val log = LoggerFactory.getLogger(classOf[TreescorePlugin])

  private def warnIfShort(budget: CacheBudget): Unit = {
    budget.warning.foreach(log.warn)
    log.info(s"treescore: the model cache's budget is ${CacheBudget.readable(budget.maxBytes)} (${budget.describe})")
  }

  private[treescore] def registerGauges(registry: MetricRegistry): Unit = {
    def gauge(name: String)(read: => Long): Unit = registry.register(name, new Gauge[Long] { override def getValue: Long = read })
    WireCodes.NativeMemory.names.foreach(kind => gauge(s"nativeMemory.$kind")(NativeMemory.heldIfLoaded()(kind)))
    gauge("nativeMemory.total")(NativeMemory.heldIfLoaded().total)
    gauge("nativeMemory.peak")(NativeMemory.heldIfLoaded().peak)
    gauge("models.loaded")(ModelCache.loadedCount.toLong)
    gauge("models.evictions")(ModelCache.evictions)
    gauge("models.budgetBytes")(ModelCache.budgetBytes)
  }
}
