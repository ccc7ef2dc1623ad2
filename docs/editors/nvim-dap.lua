-- nvim-dap: ndbg as a debug adapter for Python files.
-- Put this in your Neovim config (after nvim-dap is loaded).
local dap = require('dap')

-- The adapter: `ndbg dap` speaks DAP on stdio. (For a server on a port,
-- run `ndbg dap --listen 127.0.0.1:4711` and use
-- { type = 'server', host = '127.0.0.1', port = 4711 } instead.)
dap.adapters.ndbg = {
  type = 'executable',
  command = 'ndbg', -- or the full path of the binary
  args = { 'dap' },
}

-- Configurations: the same fields as docs/editors/launch.json.
dap.configurations.python = dap.configurations.python or {}
for _, backend in ipairs({ 'neural', 'real', 'compare' }) do
  table.insert(dap.configurations.python, {
    type = 'ndbg',
    request = 'launch',
    name = 'ndbg (' .. backend .. ')',
    program = '${file}',
    call = function()
      return vim.fn.input('Entry call, e.g. f([3, None, 4]): ')
    end,
    backend = backend,
    stopOnEntry = true,
  })
end

-- nvim-dap can also read a project's .vscode/launch.json:
--   require('dap.ext.vscode').load_launchjs(nil, { ndbg = { 'python' } })
-- Step back with :lua require('dap').step_back() and
-- :lua require('dap').reverse_continue().
