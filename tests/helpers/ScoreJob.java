import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * A plain Spark job in Java, as a JVM-only user writes one: it scores the rows of a Parquet file
 * with a LightGBM model through treescore's SQL function, under each engine, and writes each
 * score's 64 bits in hex, one row per line, to OUT.&lt;engine&gt;. tests/test_other_linuxes.py runs
 * it inside Debian 11 roots and compares the bits with Booster.predict.
 *
 * Usage: ScoreJob MODEL_FILE ROWS_PARQUET OUT
 */
public final class ScoreJob {
  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().master("local[2]").appName("treescore-score-job")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.extensions", "treescore.TreescoreExtensions")
        .getOrCreate();
    try {
      spark.conf().set("spark.treescore.model.m", args[0]);
      Dataset<Row> rows = spark.read().parquet(args[1]);
      rows.createOrReplaceTempView("rows");
      String features = Arrays.stream(rows.columns()).filter(c -> !c.equals("id")).collect(Collectors.joining(", "));
      for (String engine : new String[] {"treescore", "lightgbm"}) {
        spark.conf().set("spark.treescore.engine", engine);
        Dataset<Row> scored = spark.sql("SELECT id, treescore_score('m', " + features + ") AS s FROM rows ORDER BY id");
        List<Row> result = scored.collectAsList();
        if (!scored.queryExecution().executedPlan().toString().contains("BatchScore")) {
          throw new AssertionError("the plan does not score in BatchScore:\n" + scored.queryExecution().executedPlan());
        }
        String bits = result.stream().map(r -> Long.toHexString(Double.doubleToRawLongBits(r.getDouble(1))) + "\n")
            .collect(Collectors.joining());
        Files.write(Paths.get(args[2] + "." + engine), bits.getBytes(StandardCharsets.US_ASCII));
      }
    } finally {
      spark.stop();
    }
  }
}
