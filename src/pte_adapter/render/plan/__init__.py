"""What to draw, as plain data: the graphs of a program for Model Explorer, before any Model
Explorer object exists.

`program_plan(result)` reads the analysis (`analysis.program_analysis`) and decides every node, edge,
group, block, boundary node, nesting and node id; `render/model_explorer.py` only turns the plan into
`graph_builder` objects. The plan also says where each instruction and each decoded operation was
drawn (`ProgramPlan.methods`), so overlays (measured time, estimated cycles) never re-derive ids.
Nothing here imports Model Explorer.
"""
