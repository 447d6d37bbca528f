-- treescore from SQL alone: register a model by name, score a table, ask what-if questions.
--
-- Any session with treescore's jar and extensions runs it, e.g. Spark's SQL shell, with
-- treescore.example.dir naming a folder that holds demand.txt (a LightGBM text model over
-- price, discount and stock) and sales.parquet (columns id, price, discount, stock):
--
--   spark-sql --jars "$(python -c 'import treescore; print(treescore.jar_path())')" \
--     --conf spark.sql.extensions=treescore.TreescoreExtensions \
--     --conf treescore.example.dir=/data/demand -f examples/sql_session.sql
--
-- tests/test_sql.py runs these statements one by one in a fresh session and checks the last
-- query's results against lightgbm's own Booster.predict.

-- Register the model by name: a LightGBM text model file or a saved scorer folder, on any
-- Hadoop path. It is read (and checked) when the name is first used.
SET spark.treescore.model.demand = ${treescore.example.dir}/demand.txt;

CREATE OR REPLACE TEMPORARY VIEW sales
USING parquet OPTIONS (path '${treescore.example.dir}/sales.parquet');

-- What the name resolves to.
SELECT treescore_describe('demand') AS model;

-- One prediction per row: the features in the model's order, as any numeric expressions.
CREATE OR REPLACE TEMPORARY VIEW scored AS
SELECT id, price, discount, stock, treescore_score('demand', price, discount, stock) AS units
FROM sales;

-- Columns named like the model's features may be left out; a map of options picks the output
-- (kind: prediction, raw, leaf, contrib; start_iteration, num_iterations); the grid form scores
-- every row at each discount, in one batched pass.
SELECT id,
       units,
       treescore_score('demand') AS units_by_name,
       treescore_score('demand', map('kind', 'contrib'), price, discount, stock) AS contributions,
       treescore_score_grid('demand', 'discount', array(0.0, 0.1, 0.2, 0.3)) AS units_by_discount
FROM scored
ORDER BY id;
