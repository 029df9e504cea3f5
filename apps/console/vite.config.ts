import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

// The console is built to static files the API serves under /console/ (docs/console.md). Assets
// are addressed relative to index.html, so the console works under any path prefix a proxy adds;
// in development Vite serves it and forwards the API to a running Roster (ROSTER_URL).
export default defineConfig({
  base: './',
  plugins: [react()],
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false },
  server: {
    proxy: { '/api': process.env.ROSTER_URL ?? 'http://127.0.0.1:3000' },
  },
})
